"""Client arbitration (P4Runtime "MasterArbitrationUpdate"), as a sans-I/O state machine.

Rules, following the P4Runtime specification and BMv2's server for the default role:
- Each stream channel is a *client*, identified by any hashable key. Its first arbitration
  update must name this device (else NOT_FOUND, and the stream ends); a later update naming
  another device is FAILED_PRECONDITION. An election id already held by another connected
  client is INVALID_ARGUMENT. Roles other than the default one are UNIMPLEMENTED.
- The client with the highest election id is the primary; clients without an election id are
  always backups. If the primary changes (a new client outbids it, it lowers its id, or it
  disconnects and the next-highest takes over), *every* client is told; otherwise only the
  client that sent the update is. Primaries hear OK, backups ALREADY_EXISTS, and when nobody
  is primary everybody hears NOT_FOUND. Each notification carries the primary's election id
  (or the highest one ever seen when there is no primary).
- Writes and pipeline changes are allowed only with the primary's election id; with no
  clients connected at all, a request without an election id is allowed (as BMv2 does, for
  debugging and scripted set-up).

Nothing here does I/O: `update()` and `disconnect()` return the notifications to send.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable

from .errors import (
    ALREADY_EXISTS,
    FAILED_PRECONDITION,
    INVALID_ARGUMENT,
    NOT_FOUND,
    OK,
    PERMISSION_DENIED,
    UNIMPLEMENTED,
    RequestError,
)


@dataclass(frozen=True, kw_only=True)
class Notification:
    """One arbitration message to send to `client`."""

    client: Hashable
    device_id: int
    election_id: int | None  # the primary's, or the highest seen when there is no primary
    code: str  # OK (you are primary), ALREADY_EXISTS (backup), NOT_FOUND (no primary)

    @property
    def message(self) -> str:
        return {
            OK: "you are the primary client",
            ALREADY_EXISTS: "another client is primary",
            NOT_FOUND: "no primary client",
        }[self.code]


class Arbitration:
    """Primary election among the stream channels of one device."""

    def __init__(self, device_id: int) -> None:
        self.device_id = device_id
        self._clients: dict[Hashable, int | None] = {}  # client -> election id (None = backup)
        self._highest_seen: int | None = None

    # -- queries --------------------------------------------------------------------------------

    @property
    def primary(self) -> Hashable | None:
        best = None
        for client, election_id in self._clients.items():
            if election_id is not None and (best is None or election_id > self._clients[best]):
                best = client
        return best

    @property
    def primary_election_id(self) -> int | None:
        primary = self.primary
        return None if primary is None else self._clients[primary]

    def is_connected(self, client: Hashable) -> bool:
        return client in self._clients

    def check_primary(self, election_id: int | None, what: str) -> None:
        """Refuse `what` (a Write, a pipeline change) unless it carries the primary's id."""
        if not self._clients and election_id is None:
            return
        primary_id = self.primary_election_id
        if primary_id is None or election_id != primary_id:
            shown = "no election id" if election_id is None else f"election id {election_id}"
            raise RequestError(
                PERMISSION_DENIED,
                f"{what} refused: {shown} is not the primary's"
                + ("" if primary_id is None else f" ({primary_id})"),
            )

    # -- events ---------------------------------------------------------------------------------

    def update(
        self,
        client: Hashable,
        *,
        device_id: int,
        election_id: int | None,
        role_name: str = "",
        role_id: int = 0,
    ) -> list[Notification]:
        """A MasterArbitrationUpdate from `client`. Raises RequestError to end its stream."""
        known = client in self._clients
        if device_id != self.device_id:
            if known:
                raise RequestError(
                    FAILED_PRECONDITION,
                    f"arbitration: device id {device_id} differs from this stream's "
                    f"device {self.device_id}",
                )
            raise RequestError(
                NOT_FOUND, f"arbitration: no device {device_id} (this is device {self.device_id})"
            )
        if role_name or role_id:
            raise RequestError(
                UNIMPLEMENTED, "arbitration: only the default role is supported"
            )
        if election_id is not None:
            for other, other_id in self._clients.items():
                if other != client and other_id == election_id:
                    raise RequestError(
                        INVALID_ARGUMENT,
                        f"arbitration: election id {election_id} is already used by another "
                        "client",
                    )
        before = (self.primary, self.primary_election_id)
        self._clients[client] = election_id
        if election_id is not None and (
            self._highest_seen is None or election_id > self._highest_seen
        ):
            self._highest_seen = election_id
        after = (self.primary, self.primary_election_id)
        if before != after:
            return self._notify(list(self._clients))
        return self._notify([client])

    def disconnect(self, client: Hashable) -> list[Notification]:
        """`client`'s stream ended; if it was primary, the next-highest takes over."""
        if client not in self._clients:
            return []
        was_primary = client == self.primary
        del self._clients[client]
        return self._notify(list(self._clients)) if was_primary else []

    def _notify(self, clients: list[Hashable]) -> list[Notification]:
        primary = self.primary
        if primary is None:
            election_id, codes = self._highest_seen, {c: NOT_FOUND for c in clients}
        else:
            election_id = self._clients[primary]
            codes = {c: OK if c == primary else ALREADY_EXISTS for c in clients}
        return [
            Notification(
                client=c, device_id=self.device_id, election_id=election_id, code=codes[c]
            )
            for c in clients
        ]
