"""Real stories in the world model: parsers from published ToM stories to the checker's trace, the
oracle that re-derives their gold answers, and higher-order and adversarial variants of them.

`story.py` holds the parsed form every source shares (numbered lines, each with its events);
`hitom.py`, `tomi.py` parse one source each; `oracle.py` replays a parsed question through
`schemas.world.checker` under a named rule set; `variants.py` and `operators.py` build new questions and
stories in the source's own sentences. Nothing here imports the simulator: the checker stays independent.
"""
