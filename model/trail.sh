#!/usr/bin/env bash
# model/trail.sh DIR - replay the trail SPIN left in DIR (made by
# `model/check.sh -k ...`) as a story, with process names: A0, A1, ... are
# acquirer/holders, R0, R1, ... reapers/sweepers; tok 1 is the dead owner
# the lock starts with; claimN is a claim name (self-claims of attempt t are
# claims 3(t-2), 3(t-2)+1 and 3(t-2)+2, the reapers' come after); dir N is a
# directory object (dir 1 the dead owner's, then one per mkdir). For
# share.pml (configurations share*) every process is an acquirer A0, A1, ...;
# dir t is attempt t's directory, "entry t" its r-/s- entry name, modes
# 1 exclusive, 2 shared, 4 slots.
set -u
cd "$1" || exit 1
na=$(grep -oP '(?<=-DNA=)\d+' flags 2>/dev/null || echo 2)
# shellcheck disable=SC2046
pml=dirlock.pml
[ -f share.pml ] && pml=share.pml
# shellcheck disable=SC2046
spin -t $(cat flags) $pml 2>&1 | grep -E "MSC:|assertion violated" | sed 's/^ *//' |
	awk -v na="$na" '{
		line = $0
		out = ""
		while (match(line, /P[0-9]+/)) {
			p = substr(line, RSTART + 1, RLENGTH - 1) + 0
			nm = (p <= na) ? ("A" (p - 1)) : ("R" (p - na - 1))
			out = out substr(line, 1, RSTART - 1) nm
			line = substr(line, RSTART + RLENGTH)
		}
		print out line
	}' | sed 's/MSC: //' | nl
