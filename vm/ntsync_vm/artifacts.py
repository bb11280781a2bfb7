"""A cloud guest's job input (a tar on a disk), its NoCloud seed, and the results that come back."""

import io
import shlex
import shutil
import subprocess
import tarfile
import tempfile
import time
from pathlib import Path

from .util import REPO, VM_DIR, Failure, run


def make_seed(run_dir, hostname, shell_password=False, serial="ntsync-in", script="guest.sh", instance="ntsync"):
    """The NoCloud seed: unpack the job's tar from the disk with serial SERIAL into
    /var/tmp/SERIAL and run SCRIPT from it."""
    d = f"/var/tmp/{serial}"
    user_data = [
        "#cloud-config",
        f"# ntsync-vm: unpack the job from the disk with serial {serial} and run it",
        "runcmd:",
        f"  - [ bash, -c, 'mkdir -p {d} && tar -xf /dev/disk/by-id/virtio-{serial}"
        f" -C {d} && exec bash {d}/{script}' ]",
    ]
    if shell_password:
        user_data += ["chpasswd:", "  expire: false", "  users:", "    - {name: root, password: ntsync, type: text}"]
    (run_dir / "user-data").write_text("\n".join(user_data) + "\n")
    (run_dir / "meta-data").write_text(f"instance-id: {instance}-{run_dir.name}\nlocal-hostname: {hostname}\n")
    seed = run_dir / "seed.img"
    run(["cloud-localds", str(seed), str(run_dir / "user-data"), str(run_dir / "meta-data")])
    return seed


def make_input(run_dir, job, env, repo=None, share=None, extra=None):
    """The job's input tar (run_dir/in.tar): guest.sh, the job's script, job.env, our
    packages as the signed repository REPO (a folder, repo.build), the module's source,
    SHARE and EXTRA {name in the input: host path}."""
    tarpath = run_dir / "in.tar"
    env_text = "".join(f"{k}={shlex.quote(str(v))}\n" for k, v in env.items())
    with tarfile.open(tarpath, "w") as tf:
        def add_text(name, text, mode=0o644):
            data = text.encode()
            ti = tarfile.TarInfo(name)
            ti.size, ti.mode, ti.mtime = len(data), mode, int(time.time())
            tf.addfile(ti, io.BytesIO(data))
        tf.add(VM_DIR / "guest/guest.sh", "guest.sh")
        tf.add(VM_DIR / f"guest/jobs/{job}.sh", "job.sh")
        add_text("job.env", env_text)
        if repo:
            tf.add(repo, "repo")
        # The module source always goes along: without packages the guest builds it, and
        # `bench` falls back to it when the dkms package's copy is missing.
        with tempfile.TemporaryDirectory(prefix="ntsync-src-") as tmp:
            r = subprocess.run(["bash", str(REPO / "module/install-source"), f"{tmp}/src"],
                               capture_output=True, text=True)
            if r.returncode:
                raise Failure(f"module/install-source failed: {r.stderr.strip()}")
            tf.add(f"{tmp}/src", "src")
        if share:
            tf.add(share, "share")
        for name, path in (extra or {}).items():
            tf.add(path, name)
    # A raw disk must be a whole number of sectors.
    size = tarpath.stat().st_size
    with open(tarpath, "ab") as f:
        f.truncate(((size + 1024 * 1024 - 1) // (1024 * 1024)) * 1024 * 1024 or 1024 * 1024)
    return tarpath


def read_results(out_img, dest):
    dest.mkdir(parents=True, exist_ok=True)
    try:
        with tarfile.open(out_img, "r:") as tf:
            safe = [m for m in tf.getmembers()
                    if (m.isfile() or m.isdir()) and not m.name.startswith("/") and ".." not in Path(m.name).parts]
            for m in safe:
                m.mode = (m.mode | 0o600) & 0o755
            tf.extractall(dest, members=safe)
        return bool(safe)
    except (tarfile.TarError, OSError):
        return False


def prune_runs(runs, keep=12):
    dirs = sorted((p for p in runs.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime)
    for old in dirs[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
