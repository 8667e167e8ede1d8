"""How Bench's records are laid out as DynamoDB items, one module per kind of item that more than
one concern reads or writes; an item only one concern touches is laid out in that concern's own
file (`accounts.py`'s grants, `evals.py`'s queues, ...). Each concern's docstring lists its
items; the indexes are in `table.py`.

- `values.py`  numbers, JSON texts, expiry attributes and update expressions: what every item uses
- `keys.py`    the keys of an agent's partition, and the expiry of a temporary agent's items
- `users.py`   the user item, which counts an account's agents
- `agents.py`  the agent item (settings, counters, newest runs) and its days
- `tasks.py`   the task item: its folded fields as two JSON texts, what subtasks ADD until its
               next fold, its run keys
- `pages.py`   events stored together on pages
"""
