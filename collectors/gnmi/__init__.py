"""The gNMI collector: sessions, subscriptions, the hot-path decoder, path mapping and
recordings."""
