"""The local web server of ``deuteron serve`` and the built UI bundle (``static/``)."""
