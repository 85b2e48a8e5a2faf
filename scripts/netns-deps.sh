#!/usr/bin/env bash
# Installs what the partition tests need (internal/testenv/netns.go):
# Debian's iproute2 (ip netns, veth) and iptables (DROP inside a
# namespace). A no-op when both are there; without root it says so and
# leaves the tests to report that namespaces cannot be used.
set -euo pipefail
missing=()
command -v ip >/dev/null || missing+=(iproute2)
command -v iptables >/dev/null || missing+=(iptables)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "netns-deps: ${missing[*]} missing and not root: the partition tests will say they cannot run" >&2
  exit 0
fi
echo "netns-deps: installing ${missing[*]} (Debian packages) for the partition tests" >&2
DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2
