#!/usr/bin/env bash
# Prints a folder holding the upstream Helm charts the tests render and install, whole, laid out
# like ../shared/charts: kamaji/, kamaji-etcd/, cluster-autoscaler/, vsphere-cpi/,
# openstack-cloud-controller-manager/, openstack-cinder-csi/, cloud-provider-azure/ (sources.tsv
# lists them; openstack-cloud-controller-manager needs bitnami's `common`, which it does not hold):
#
#   charts.sh            copied from ../shared/charts when it is there (taking any chart it lacks
#                        from the modules); else from the Go modules of the upstream releases
#                        (go.mod/go.sum pin the versions and the bytes)
#   charts.sh DIR        DIR instead of ../shared/charts
#   charts.sh --modules  from the Go modules, even when ../shared/charts is there (check.sh)
#
# The folder is made anew under $TMPDIR on each call (a copy: tests add a packaged dependency
# into kamaji/charts/, and the caller removes it).
set -euo pipefail
prog=charts.sh
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
case "${1:-}" in
  --modules) up_assemble chart - modules ;;
  "") if [ -d "$up_shared/charts" ]; then up_assemble chart "$up_shared/charts" shared; else up_assemble chart - modules; fi ;;
  -*) echo "usage: charts.sh [DIR | --modules]" >&2; exit 2 ;;
  *) [ -d "$1" ] || up_die "no chart folder at $1"; up_assemble chart "$1" shared ;;
esac
