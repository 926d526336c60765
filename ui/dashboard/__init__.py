"""The Streamlit ops dashboard: it reads only through the API (``ui.api.client``), never the
store."""
