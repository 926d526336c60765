"""The one read-side query layer: validated parameters, the SQL behind every read, and the shapes it
answers with (the API serves them, the dashboard and the CLI show them)."""
