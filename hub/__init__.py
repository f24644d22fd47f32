"""Publishing releases: dataset card, manifest, the Hugging Face Hub (or a local folder) and verification.

`huggingface_hub` reads HF_ENDPOINT at import, so it is imported inside functions, never at
module import time; endpoint and token are resolved at call time from the environment.
"""
