"""Action profiles and action selectors: members (action + data) and groups of members.

Indirect tables store, per entry, a member or a group id; the packet path resolves it here. A
selector picks a group member by the JSON's selector hash over its input fields, modulo the
group size (BMv2's behaviour), so a flow always lands on the same member.
"""

from __future__ import annotations

from ..errors import InvalidArgument, NotFound, ResourceExhausted


class ActionProfile:
    def __init__(self, name: str, max_size: int, selector=None):
        self.name = name
        self.max_size = max_size
        self.selector = selector  # compiled calculation (f, v, payload) -> int, or None
        self.members: dict[int, tuple[int, tuple[int, ...]]] = {}  # id -> (action id, params)
        self.groups: dict[int, list[int]] = {}
        self.tables: list = []    # tables using this profile (they share its action set)
        self._next_member = 0
        self._next_group = 0

    def check(self, action_id: int, params) -> tuple[int, ...]:
        if not self.tables:
            raise InvalidArgument(f"action profile '{self.name}' is used by no table")
        table = self.tables[0]
        index = table.action_index_by_id.get(action_id)
        if index is None:
            raise InvalidArgument(f"action id {action_id} is not allowed in profile "
                                  f"'{self.name}'")
        return table.check_action(index, params)

    def add_member(self, action_id: int, params) -> int:
        params = self.check(action_id, params)
        if len(self.members) >= self.max_size:
            raise ResourceExhausted(f"action profile '{self.name}' is full")
        member = self._next_member
        self._next_member += 1
        self.members[member] = (action_id, params)
        self._invalidate()
        return member

    def modify_member(self, member: int, action_id: int, params) -> None:
        self.member(member)
        self.members[member] = (action_id, self.check(action_id, params))
        self._invalidate()

    def delete_member(self, member: int) -> None:
        self.member(member)
        del self.members[member]
        for members in self.groups.values():
            while member in members:
                members.remove(member)
        self._invalidate()

    def member(self, member: int) -> tuple[int, tuple[int, ...]]:
        found = self.members.get(member) if isinstance(member, int) else None
        if found is None:
            raise NotFound(f"action profile '{self.name}' has no member {member!r}")
        return found

    def create_group(self) -> int:
        if self.selector is None:
            raise InvalidArgument(f"action profile '{self.name}' has no selector: no groups")
        group = self._next_group
        self._next_group += 1
        self.groups[group] = []
        return group

    def group(self, group: int) -> list[int]:
        found = self.groups.get(group) if isinstance(group, int) else None
        if found is None:
            raise NotFound(f"action profile '{self.name}' has no group {group!r}")
        return found

    def delete_group(self, group: int) -> None:
        self.group(group)
        del self.groups[group]
        self._invalidate()

    def add_to_group(self, member: int, group: int) -> None:
        self.member(member)
        members = self.group(group)
        if member in members:
            raise InvalidArgument(f"member {member} is already in group {group}")
        members.append(member)
        self._invalidate()

    def remove_from_group(self, member: int, group: int) -> None:
        members = self.group(group)
        if member not in members:
            raise NotFound(f"member {member} is not in group {group}")
        members.remove(member)
        self._invalidate()

    def _invalidate(self) -> None:
        for table in self.tables:
            table.cache.clear()

    def resolve(self, table, entry, f, v):
        """The (action index, params, entry) an indirect entry stands for on this packet."""
        if entry.group is not None:
            members = self.groups.get(entry.group)
            if not members:
                return table.default[0]
            member = members[self.selector(f, v, b"") % len(members)]
        else:
            member = entry.member
        found = self.members.get(member)
        if found is None:
            return table.default[0]
        return (table.action_index_by_id[found[0]], found[1], entry)
