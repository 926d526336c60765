"""What people reach: the read-side query layer (``query``), the REST API over it (``api``) and the
Streamlit dashboard that reads through the API (``dashboard``)."""
