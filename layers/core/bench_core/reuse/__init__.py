"""Authorized reuse (SPEC section 7): an owner publishes what an agent can do and who may call
it; callers call it through Bench, which checks, counts, forwards and records every call.

- `models`: the capability card and grants at the edge (pydantic); what the store keeps of
  them is in `domain/reuse_records.py`;
- `capability`: publishing a card, and what a viewer may see of it;
- `grants`: the owner's per-caller grants and the quota windows a call counts in;
- `outbound`: the only way Bench reaches an agent endpoint (public https addresses only);
- `signing`: the header that tells an agent a call came through Bench, and from whom;
- `invoke`: one call, end to end.
"""
