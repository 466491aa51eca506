"""Collecting a profile: a session (:mod:`.session`) joins context sources (:mod:`.context`: where
the program is) with a backend (:mod:`.backends`: what each kernel cost) into one tree."""
