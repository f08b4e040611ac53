"""The `attn` command a pip install puts on PATH: the CLI binary built with the package
(attn/bin/attn), run in place of this process, so its exit code, signals and output are its own."""
import os
import sys


def main():
    binary = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "attn")
    if not os.access(binary, os.X_OK):
        sys.exit(f"error: {binary}: the attn command was not installed with the package")
    os.execv(binary, [binary, *sys.argv[1:]])


if __name__ == "__main__":
    main()
