"""Builds the Python package with CMake: the compiled core attn._attn (the C++ library, its
embedded vectors and models, linked in) and the attn command (attn/bin/attn, run by the `attn`
entry point). Metadata is in pyproject.toml.

ATTN_CMAKE_BUILD_DIR=DIR reuses a configured CMake build tree (make build's build/, say) instead
of configuring a fresh one under build-wheel/: only the two targets are brought up to date.
"""
import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        given = os.environ.get("ATTN_CMAKE_BUILD_DIR")
        build_dir = os.path.abspath(given) if given else os.path.join(ROOT, "build-wheel", "cmake")
        if not given:
            # The package needs the library, the module and the command: no tests, no MPI tool,
            # no install rules. The interpreter is the one building the wheel.
            subprocess.check_call(["cmake", "-S", ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
                                   "-DATTN_BUILD_TESTS=OFF", "-DATTN_INSTALL=OFF", "-DATTN_BUILD_PYTHON=ON",
                                   f"-DATTN_PYTHON_EXECUTABLE={sys.executable}"])
        jobs = str(os.cpu_count() or 1)
        subprocess.check_call(["cmake", "--build", build_dir, "-j", jobs, "--target", "attn_python", "attn_cli"])
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


setup(ext_modules=[Extension("attn._attn", sources=[])], cmdclass={"build_ext": CMakeBuild})
