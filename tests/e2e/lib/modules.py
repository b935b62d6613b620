#!/usr/bin/env python3
"""Every upstream Go module whose files the e2e scenarios read (CRDs, RBAC, components, charts,
contract labels), gathered from the scenario modules that declare them at their versions: one
home for each version. tests/e2e/run downloads what this prints, one module@version a line.

Usage: python3 lib/modules.py
"""
import os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import availability, capi, capi_fleet, cluster  # noqa: E402


def modules():
    seen = []
    for m in cluster.MODULES + capi.MODULES + capi_fleet.MODULES + availability.MODULES:
        if m not in seen:
            seen.append(m)
    return seen


if __name__ == "__main__":
    print("\n".join(modules()))
