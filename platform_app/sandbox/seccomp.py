"""The system-call filter of every sandbox, compiled with libseccomp (pyseccomp) and handed to `bwrap --seccomp`.

It refuses what Docker's default profile refuses to a container without extra capabilities: mounting and
namespaces (mount, umount2, pivot_root, unshare, setns, clone with a CLONE_NEW* flag; clone3 answers ENOSYS
so the C library falls back to clone, whose flags can be read), tracing and reading other processes (ptrace,
process_vm_readv/writev, kcmp), the kernel keyring, bpf and perf events, kernel modules and kexec, the clock,
swap, reboot, quotas, file handles (open_by_handle_at), userfaultfd, io_uring, the new mount API, and the
obsolete calls Docker also drops. Everything else is allowed; bwrap loads the filter last, after it has set the
sandbox up, so the filter binds the command and every process it starts.
"""
import errno
import os
import tempfile
from functools import lru_cache

REFUSED = (
    # mounting and namespaces
    "mount", "umount", "umount2", "pivot_root", "unshare", "setns", "chroot",
    "fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr",
    # other processes
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
    # kernel keyring, bpf, perf events
    "add_key", "request_key", "keyctl", "bpf", "perf_event_open",
    # modules, kexec, reboot, swap, accounting, quotas
    "init_module", "finit_module", "delete_module", "create_module", "get_kernel_syms", "query_module",
    "kexec_load", "kexec_file_load", "reboot", "swapon", "swapoff", "acct", "quotactl", "quotactl_fd",
    "nfsservctl", "lookup_dcookie", "syslog", "uselib", "ustat", "sysfs", "_sysctl",
    # the clock
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "stime",
    # file handles, page faults handled in user space, io_uring
    "open_by_handle_at", "name_to_handle_at", "userfaultfd",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    # memory policy and raw I/O ports
    "mbind", "set_mempolicy", "get_mempolicy", "move_pages", "migrate_pages", "iopl", "ioperm", "vm86", "vm86old",
)
CLONE_NEW_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000,
                   0x00000080)  # NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET, NEWTIME


@lru_cache(maxsize=1)
def filter_program() -> bytes | None:
    """The compiled BPF program, or None where libseccomp cannot be loaded (the report says so)."""
    try:
        import pyseccomp as seccomp

        rules = seccomp.SyscallFilter(seccomp.ALLOW)
    except (ImportError, OSError, RuntimeError):
        return None
    for name in REFUSED:
        try:
            rules.add_rule(seccomp.ERRNO(errno.EPERM), name)
        except (OSError, ValueError, RuntimeError):
            pass  # not a system call of this architecture
    for flag in CLONE_NEW_FLAGS:
        rules.add_rule(seccomp.ERRNO(errno.EPERM), "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    rules.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    with tempfile.TemporaryFile() as out:
        rules.export_bpf(out)
        out.seek(0)
        return out.read()


def filter_fd() -> int | None:
    """A readable descriptor holding the program (for `bwrap --seccomp FD`), or None."""
    program = filter_program()
    if program is None:
        return None
    read, write = os.pipe()
    os.write(write, program)  # a few kilobytes: well within a pipe's buffer
    os.close(write)
    return read
