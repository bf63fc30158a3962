//! Asking the kernel to wake on time the threads that run an `ltx-link`
//! link in real time: the shim's UDP relay in `ltx` and the emulator's TUN
//! forwarder in `ltx-emu`. Such a thread sleeps until the next packet is
//! due; how late it runs after that is the emulated path's timing error, so
//! it asks, where it may without privileges, for the two things that decide
//! it.

/// How late the kernel may end the thread's waits, to coalesce wake-ups.
/// Its default, 50 µs, is a quarter of a packet's serialization at
/// 50 Mbit/s.
#[cfg(target_os = "linux")]
const TIMER_SLACK_NS: u64 = 1_000;

/// The thread's scheduler time slice. EEVDF (Linux 6.6 and later) lets a
/// waking thread preempt a busy one only if its virtual deadline, one slice
/// away (1.5 ms by default on two cores), is earlier, so a short slice wakes
/// it sooner. Since Linux 6.12 any thread may choose a slice down to 100 µs;
/// older kernels ignore it.
#[cfg(target_os = "linux")]
const SLICE_NS: u64 = 100_000;

/// Lowers the current thread's timer slack and shortens its time slice,
/// where the platform allows it; a refusal is logged and otherwise
/// harmless: wake-ups are only later.
pub fn prefer_prompt_wakeups() {
    #[cfg(target_os = "linux")]
    {
        let slack = std::num::NonZeroU64::new(TIMER_SLACK_NS);
        if let Err(error) = rustix::thread::set_current_timer_slack(slack) {
            tracing::debug!(%error, "cannot lower the thread's timer slack");
        }
        if let Err(error) = linux::set_current_slice(SLICE_NS) {
            tracing::debug!(%error, "cannot shorten the thread's time slice");
        }
    }
}

/// The real-time priority [`prefer_realtime_scheduling`] asks for: the
/// lowest, enough to run before every thread of the default policy
/// (builds, the programs under test) without competing with the kernel's
/// own real-time threads.
#[cfg(target_os = "linux")]
const REALTIME_PRIORITY: i32 = 1;

/// Moves the current thread to `SCHED_FIFO` at its lowest priority, so that
/// it runs as soon as it wakes, ahead of every ordinary thread. Needs root
/// (or `CAP_SYS_NICE`); where refused, the error is returned and the thread
/// keeps its policy. Only for threads that never spin: a busy one would take
/// up to 95 % of a CPU (`kernel.sched_rt_runtime_us`) from everything else.
pub fn prefer_realtime_scheduling() -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        let param = libc::sched_param {
            sched_priority: REALTIME_PRIORITY,
        };
        // SAFETY: `param` is a live, initialised `sched_param`; pid 0 is
        // the calling thread.
        if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }
    #[cfg(not(target_os = "linux"))]
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "real-time scheduling is only asked for on Linux",
    ))
}

#[cfg(target_os = "linux")]
mod linux {
    use std::io;

    /// `struct sched_attr` of `sched_setattr(2)`, its first published
    /// version (`SCHED_ATTR_SIZE_VER1`, 56 bytes).
    #[repr(C)]
    #[derive(Debug, Default)]
    struct SchedAttr {
        size: u32,
        policy: u32,
        flags: u64,
        nice: i32,
        priority: u32,
        /// For `SCHED_OTHER`, the time slice in nanoseconds (0: default).
        runtime: u64,
        deadline: u64,
        period: u64,
        util_min: u32,
        util_max: u32,
    }

    /// Sets the calling thread's time slice to `nanos`, if it runs under
    /// the default policy; its nice value is kept.
    pub(super) fn set_current_slice(nanos: u64) -> io::Result<()> {
        let size = std::mem::size_of::<SchedAttr>();
        let mut attr = SchedAttr::default();
        // SAFETY: `attr` is a live, writable `sched_attr` of `size` bytes,
        // the most the kernel writes; pid 0 is the calling thread.
        let got = unsafe {
            libc::syscall(
                libc::SYS_sched_getattr,
                0,
                &mut attr as *mut SchedAttr,
                size as libc::c_uint,
                0,
            )
        };
        if got != 0 {
            return Err(io::Error::last_os_error());
        }
        // Real-time and deadline threads have their own timing; idle and
        // batch ones asked not to be hurried.
        if attr.policy != libc::SCHED_OTHER as u32 {
            return Ok(());
        }
        attr.size = size as u32;
        attr.runtime = nanos;
        // SAFETY: `attr` is a live, initialised `sched_attr` whose `size`
        // field says how much the kernel may read; pid 0 is the calling
        // thread.
        let set =
            unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &attr as *const SchedAttr, 0) };
        if set != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_thread_that_asks_gets_a_microsecond_of_timer_slack() {
        // On a thread of its own, so that the test harness's are untouched.
        let slack = std::thread::spawn(|| {
            prefer_prompt_wakeups();
            // SAFETY: PR_GET_TIMERSLACK takes no pointer; it returns the
            // calling thread's slack in nanoseconds.
            unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) }
        })
        .join()
        .unwrap();
        assert_eq!(slack, TIMER_SLACK_NS as libc::c_int);
    }

    #[test]
    fn real_time_scheduling_is_granted_to_root_and_refused_otherwise() {
        let (result, policy) = std::thread::spawn(|| {
            let result = prefer_realtime_scheduling();
            // SAFETY: pid 0 is the calling thread.
            (result, unsafe { libc::sched_getscheduler(0) })
        })
        .join()
        .unwrap();
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            assert!(result.is_ok(), "{result:?}");
            assert_eq!(policy, libc::SCHED_FIFO);
        } else {
            // Without CAP_SYS_NICE and an RLIMIT_RTPRIO the kernel refuses;
            // the thread keeps its policy.
            if result.is_err() {
                assert_eq!(policy, libc::SCHED_OTHER);
            }
        }
    }
}
