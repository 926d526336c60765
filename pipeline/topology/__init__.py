"""The fabric's topology as data: switches, host ports, links, tiers, and the names everyone
shares."""
