"""Builds the Python package with CMake: the compiled core attn._attn (the C++ library, its
embedded vectors and models, linked in) and the attn command (attn/bin/attn, run by the `attn`
entry point). Metadata is in pyproject.toml.

Which CMake tree: ATTN_CMAKE_BUILD_DIR=DIR if given; else the checkout's build/ when `make build`
configured it for a Python of this one's ABI (a Release build, not the sanitizers'), so nothing
built there is compiled twice; else a fresh tree under build-wheel/. Only the two targets are
brought up to date. pip hides a build's output unless run with -v, so the progress also goes
to the terminal (/dev/tty) where there is one.
"""
import os
import shutil
import re
import subprocess
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


def check_interpreter():
    """Says up front what this Python lacks, in one line, instead of setuptools' "invalid command
    'bdist_wheel'" (a pyenv or a bare venv without the wheel package). NumPy is needed only to
    run attn, so its absence is a warning here."""
    try:
        from setuptools.command import bdist_wheel  # noqa: F401 (setuptools >= 70.1 has its own)
    except ImportError:
        try:
            import wheel  # noqa: F401
        except ImportError:
            sys.exit(f"error: {sys.executable}: this Python has no 'wheel' package, which building attn's "
                     "wheel needs; make the environment from Debian's /usr/bin/python3 "
                     "(`/usr/bin/python3 -m venv --system-site-packages env`, with python3-wheel and "
                     "python3-numpy installed), or install wheel into it")
    try:
        import numpy  # noqa: F401
    except ImportError:
        print(f"warning: {sys.executable}: this Python has no NumPy, which `import attn` needs",
              file=sys.stderr)


def reusable_build_dir():
    """The checkout's build/ when `make build` configured it for this Python's ABI, else None."""
    cache = os.path.join(ROOT, "build", "CMakeCache.txt")
    if not os.path.exists(cache):
        return None
    text = open(cache, encoding="utf-8", errors="replace").read()
    def value(name):
        m = re.search(rf"^{name}:[A-Z]+=(.*)$", text, re.M)
        return m.group(1).strip() if m else ""
    if value("CMAKE_BUILD_TYPE") != "Release" or value("ATTN_SANITIZE").upper() in ("ON", "1", "TRUE"):
        return None
    if value("ATTN_BUILD_PYTHON").upper() not in ("ON", "AUTO", "1", "TRUE"):
        return None
    # AUTO configured before pybind11 was there (`make demo` on a fresh machine) has no module target;
    # its configure writes the package's Python files into build/python/attn/ only when it has one.
    if not os.path.exists(os.path.join(ROOT, "build", "python", "attn", "__init__.py")):
        return None
    python = value("ATTN_PYTHON_EXECUTABLE") or value("ATTN_PYTHON")
    if not python or not os.path.exists(python):
        return None
    # The module built there loads here only if both interpreters share the extension suffix.
    theirs = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))"],
                            capture_output=True, text=True).stdout.strip()
    return os.path.join(ROOT, "build") if theirs == sysconfig.get_config_var("EXT_SUFFIX") else None


def open_terminal():
    try:
        return open("/dev/tty", "w")
    except OSError:
        return None


def build_with_progress(command):
    """Runs the build, its output to pip's log as usual and a one-line progress to the terminal."""
    tty = open_terminal()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for line in proc.stdout:
        sys.stdout.write(line)
        m = re.match(r"\[\s*(\d+)%\]\s*(.*)", line)
        if tty and m:
            tty.write(f"\rattn: compiling, {m.group(1):>3}% ({m.group(2)[-60:]})\x1b[K")
            tty.flush()
    if tty:
        tty.write("\n")
        tty.close()
    if proc.wait() != 0:
        raise subprocess.CalledProcessError(proc.returncode, command)


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        given = os.environ.get("ATTN_CMAKE_BUILD_DIR")
        reused = None if given else reusable_build_dir()
        if given:
            build_dir = os.path.abspath(given)
        elif reused:
            build_dir = reused
            print(f"attn: reusing the CMake tree {reused} (set ATTN_CMAKE_BUILD_DIR to choose another)")
        else:
            build_dir = os.path.join(ROOT, "build-wheel", "cmake")
        if not given and not reused:
            # The package needs the library, the module and the command: no tests, no MPI tool,
            # no install rules. The interpreter is the one building the wheel.
            subprocess.check_call(["cmake", "-S", ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
                                   "-DATTN_BUILD_TESTS=OFF", "-DATTN_INSTALL=OFF", "-DATTN_BUILD_PYTHON=ON",
                                   f"-DATTN_PYTHON_EXECUTABLE={sys.executable}"])
        jobs = str(os.cpu_count() or 1)
        build_with_progress(["cmake", "--build", build_dir, "-j", jobs, "--target", "attn_python", "attn_cli"])
        package = os.path.join(build_dir, "python", "attn")
        core = [f for f in os.listdir(package) if f.startswith("_attn") and f.endswith(".so")]
        if len(core) != 1:
            sys.exit(f"error: {package}: expected one compiled core _attn*.so, found {core}")
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy2(os.path.join(package, core[0]), target)
        # The command, beside the package's Python files (attn._cli runs it).
        binary = os.path.join(os.path.dirname(target), "bin", "attn")
        os.makedirs(os.path.dirname(binary), exist_ok=True)
        shutil.copy2(os.path.join(build_dir, "bin", "attn"), binary)
        os.chmod(binary, 0o755)


# Before setup(): without the wheel package, setuptools stops at "invalid command 'bdist_wheel'"
# while reading the command line, before any build step could say why.
if any(a in sys.argv for a in ("dist_info", "bdist_wheel", "build_ext", "install", "editable_wheel", "develop")):
    check_interpreter()

setup(ext_modules=[Extension("attn._attn", sources=[])], cmdclass={"build_ext": CMakeBuild})
