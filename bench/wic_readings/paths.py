"""Where the WiC-readings scripts find the repository, their work folder, WiC and the corpus
(environment variables REPO, WORK, WIC, CORPUS override)."""
import os
REPO = os.environ.get("REPO", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
WORK = os.environ.get("WORK", "/tmp/wicx")
WIC = os.environ.get("WIC", os.path.join(REPO, "..", "shared", "data", "wic"))
CORPUS = os.environ.get("CORPUS", os.path.join(REPO, "..", "shared", "data", "wikipedia", "enwiki.txt.xz"))
