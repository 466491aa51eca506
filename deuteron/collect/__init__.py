"""Collecting a profile: a session (:mod:`.session`) joins context sources (:mod:`.context`: where
the program is) with a backend (:mod:`.backends`: what each kernel cost) into one tree, which its
tree builder (:mod:`.tree_builder`) grows; :mod:`.api` is Proton's API over it."""
