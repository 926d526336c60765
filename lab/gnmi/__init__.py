"""Device agents speaking gNMI: dialects, rendering, the target."""
