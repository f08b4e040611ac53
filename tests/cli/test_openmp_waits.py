"""Issue #52, item 16: with other busy processes on the machine, the default thread count ran
2.5-3.8x slower than --threads 1 because libgomp's idle workers spin for milliseconds at every
barrier. attn now runs with a short spin unless the user chose one (cli/openmp_waits.cpp); the
speed itself is bench/threads_under_load's to measure, not a unit test's. Here: the setting
libgomp ends up with, as its own OMP_DISPLAY_ENV report shows it."""
import os
import re

from conftest import ATTN, run_attn


def spin_counts(r):
    """Every GOMP_SPINCOUNT libgomp reported (one report per program image it was loaded in)."""
    return re.findall(r"GOMP_SPINCOUNT = '(\d+)'", r.err)


def env_with(**values):
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    env.update(values)
    return env


def test_libgomp_runs_with_a_short_spin_by_default():
    r = run_attn("explain", "money bank grows", env=env_with(OMP_DISPLAY_ENV="verbose"))
    assert r.code == 0, r.err
    counts = spin_counts(r)
    assert counts, r.err
    assert int(counts[-1]) <= 10000, counts  # libgomp's own default is 300000
    assert "money" in r.out


def test_a_users_own_choice_is_kept():
    r = run_attn("explain", "money bank grows", env=env_with(OMP_DISPLAY_ENV="verbose", GOMP_SPINCOUNT="123456"))
    assert r.code == 0, r.err
    assert spin_counts(r) == ["123456"]
    r = run_attn("explain", "money bank grows", env=env_with(OMP_DISPLAY_ENV="verbose", OMP_WAIT_POLICY="active"))
    assert r.code == 0, r.err
    assert "OMP_WAIT_POLICY = 'ACTIVE'" in r.err
    assert len(re.findall("OMP_WAIT_POLICY =", r.err)) == 1  # run once, not again


def test_arguments_and_standard_input_reach_the_program_run_again():
    r = run_attn("tokenize", stdin="The river flows .\n")
    assert r.code == 0, r.err
    assert "river" in r.out


def test_the_process_keeps_its_name_and_runs_through_the_loader(tmp_path):
    # Run again by its real path, not /proc/self/exe (which would name the process "exe" in ps,
    # top and pgrep); and started through the dynamic loader, attn runs once, as it was.
    import subprocess
    import time
    p = subprocess.Popen([ATTN, "generate", "--ignore-eos", "--max-words", "100000", "--threads", "1", "The"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        name = ""
        for _ in range(200):
            with open(f"/proc/{p.pid}/comm") as f:
                name = f.read().strip()
            if name == os.path.basename(ATTN)[:15]:
                break
            time.sleep(0.01)
        assert name == os.path.basename(ATTN)[:15], name
    finally:
        p.kill()
        p.wait()
    loader = "/lib64/ld-linux-x86-64.so.2"
    if os.path.exists(loader):
        r = subprocess.run([loader, ATTN, "explain", "money bank"], capture_output=True, timeout=60)
        assert r.returncode == 0, r.stderr.decode()
        assert b"money" in r.stdout
