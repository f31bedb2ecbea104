"""Cisco Nexus 9000-like intelligent buffer, 10 MB per-port maximum."""

from fabricsim.devices import _nexus_ib

NAME = "nexus-ib-10mb"
SUMMARY = _nexus_ib.summary("10MB")
SWITCH = _nexus_ib.switch("10MB")
