"""The ports: every protocol a use case talks to the world through, one module each, and what a
use case may ask the composition root for (`services.py`). Ports import only the domain and the
bottom modules (settings, log); their adapters live in the packages named after them (`store/`,
`live/`, `llm/`, `embed/`, `workflows/`), and `runtime/adapters.py` picks one of each."""
