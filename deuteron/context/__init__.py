"""Context sources say *where* the program is when a kernel launches or a scope opens."""
