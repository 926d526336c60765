"""The REST API: the FastAPI app over the query layer, the ``api`` role's server, the one HTTP
client of it, and the commands it publishes."""
