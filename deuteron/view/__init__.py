"""Reading a profile as a person does, without a GPU or the program: pure tree → tree processors
(:mod:`.processors`), the chain ``deuteron view`` and the web UI show (:mod:`.build`), the analyses of
``--advise`` (:mod:`.advise`), and Proton's viewer functions on hatchet GraphFrames
(:mod:`.graphframes`, reached through ``deuteron.viewer``)."""
