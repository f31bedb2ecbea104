"""Cisco Nexus 9000-like intelligent buffer, 5 MB per-port maximum."""

from fabricsim.devices import _nexus_ib

NAME = "nexus-ib-5mb"
SUMMARY = _nexus_ib.summary("5MB")
SWITCH = _nexus_ib.switch("5MB")
