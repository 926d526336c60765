"""The fabric's topology as data: switches by tier and zone, host ports, links, the names everyone
shares (:mod:`.names`), a fabric's compact description (:mod:`.shape`), and what tiers, zones and
paths can carry (:mod:`.capacity`)."""
