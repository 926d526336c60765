"""The one command line, ``rocewatch``: each verb group in its own module, imported lazily."""
