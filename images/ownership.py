"""Container ownership: every container relpipe creates names its owner and creating process,
so the containers that a dead process left behind can be found and removed, and no other.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

from .errors import ContainerError
from .results import one_line

# Labels on every container relpipe creates: who made it (owner: a run or session id the caller
# names; host + pid + the pid's start time: the creating process), and what for (engine|extract).
RUN_LABEL = "org.relpipe.run"
OWNER_LABEL = "org.relpipe.owner"
KIND_LABEL = "org.relpipe.kind"
HOST_LABEL = "org.relpipe.host"
PID_LABEL = "org.relpipe.pid"
PID_START_LABEL = "org.relpipe.pid-start"


def process_start(pid: int) -> str | None:
    """The start time of `pid` in clock ticks since boot (/proc), None where it cannot be read.

    With the pid it names one process for good: a pid reused by a later process starts later.
    """
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text(errors="replace")
    except OSError:
        return None
    fields = stat_line.rpartition(")")[2].split()  # the command name may hold spaces and ')'
    return fields[19] if len(fields) > 19 else None  # field 22 of proc(5); state is field 3


def process_alive(pid: int, started: str | None = None) -> bool:
    """Whether the process `pid` (started at `started`, when known) still runs on this host.

    Errs towards alive: a pid that exists but cannot be signalled, or whose start time cannot be
    read, counts as alive, so a doubtful container is never removed.
    """
    if pid <= 0:
        return True  # not a pid we wrote; leave it alone
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, owned by someone else
    if started is None:
        return True
    now = process_start(pid)
    if now is None:
        return not Path("/proc/self/stat").exists()  # no /proc at all: cannot tell, so alive
    # A pid that exists but started at another time is a later process reusing the number.
    return now == started


def container_labels(kind: str, owner: str | None) -> dict[str, str]:
    """Labels of a container this process creates for `kind` (engine | extract)."""
    pid = os.getpid()
    labels = {
        RUN_LABEL: "1",
        KIND_LABEL: kind,
        HOST_LABEL: socket.gethostname(),
        PID_LABEL: str(pid),
    }
    started = process_start(pid)
    if started is not None:
        labels[PID_START_LABEL] = started
    if owner:
        labels[OWNER_LABEL] = owner
    return labels


def reap_stale(client: Any, owner: str) -> list[str]:
    """Remove the containers of `owner` whose creating process is gone; returns their ids.

    Only containers labelled with this owner and created on this host are looked at, and one
    is removed only when its creating pid no longer runs (or now names a later process): the
    containers of a live process (another shard of the same run, say) and of other owners are
    never touched. Meant for the start of a run, to clean up after a killed one.
    """
    import docker.errors
    import requests

    if not owner:
        raise ContainerError("reap_stale needs an owner (a run or session id)")
    host = socket.gethostname()
    filters = {"label": [f"{OWNER_LABEL}={owner}", f"{HOST_LABEL}={host}"]}
    try:
        # The low-level listing carries the labels itself: the high-level list inspects
        # each container afterwards and fails on one removed in between by its own client.
        listed = client.api.containers(all=True, filters=filters)
    except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
        raise ContainerError(
            f"cannot list containers of {owner}: {one_line(str(exc), 200)}"
        ) from None
    removed = []
    for entry in listed:
        labels = entry.get("Labels") or {}
        cid = str(entry.get("Id", ""))
        # The filter matched already; check again so a lying listing removes nothing.
        if not cid or labels.get(OWNER_LABEL) != owner or labels.get(HOST_LABEL) != host:
            continue
        try:
            pid = int(labels.get(PID_LABEL, ""))
        except ValueError:
            continue  # no pid: not ours to judge
        if process_alive(pid, labels.get(PID_START_LABEL)):
            continue
        try:
            client.api.remove_container(cid, force=True, v=True)
        except docker.errors.NotFound:
            continue  # removed meanwhile (its own client, or another reaper)
        except docker.errors.APIError as exc:
            raise ContainerError(
                f"cannot remove stale container {cid[:12]} of {owner}: {one_line(str(exc), 200)}"
            ) from None
        removed.append(cid)
    return removed
