"""The collectors' reading of the targets inventory: the core's model (:mod:`pipeline.inventory`)
plus the check only the collectors can make, that every target names a vendor profile that
exists and speaks the target's protocol."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from collectors.profile import available, load_profile
from pipeline import inventory as core
from pipeline.inventory import Inventory, Target, TargetCheck


def profile_check(profile_dirs: tuple[str, ...] = ()) -> TargetCheck:
    """A check that a target's profile is known (in ``profile_dirs`` or built in) and fits."""
    profiles = available(profile_dirs)

    def check(target: Target) -> str | None:
        if target.profile not in profiles:
            return (f"no profile named {target.profile!r}; available: "
                    f"{', '.join(sorted(profiles))}")
        profile = load_profile(target.profile, profile_dirs)
        if profile.protocol != target.protocol:
            return (f"profile {target.profile!r} is for {profile.protocol}, the target "
                    f"speaks {target.protocol}")
        return None

    return check


def parse_inventory(data: Mapping[str, Any], where: str = "targets", base: Path | None = None,
                    profile_dirs: tuple[str, ...] = ()) -> Inventory:
    return core.parse_inventory(data, where, base, profile_check(profile_dirs))


def load_inventory(path: str | Path, profile_dirs: tuple[str, ...] = ()) -> Inventory:
    return core.load_inventory(path, profile_check(profile_dirs))
