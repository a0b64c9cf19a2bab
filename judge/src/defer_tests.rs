use lifeline_common::restore::{DEFER_ALIGN, DEFER_END, DEFER_OFF, DEFER_USER_TIMEOUT};

use super::*;

fn on(idle_s: u32, intvl_s: u32, cnt: u32) -> App {
    App {
        keepalive: AppKeepalive::On {
            idle_s,
            intvl_s,
            cnt,
        },
        user_timeout_ms: Some(0),
        user_timeout_changed: false,
    }
}

/// An idle socket silent for `quiet_ms` with `probes` unanswered.
fn quiet(quiet_ms: u32, probes: u8) -> TcpInfo {
    TcpInfo {
        probes,
        last_ack_recv_ms: quiet_ms,
        last_data_recv_ms: quiet_ms + 5_000,
        ..TcpInfo::default()
    }
}

/// `tcp_keepalive_timer()` on a plan applied at `now_s` with `out` probes unanswered: when the
/// kernel aborts the socket (seconds after the last segment from the peer), if ever within
/// 127 fires.
fn kernel_abort(plan: KeepalivePlan, now_s: u64, out: u32, user_timeout_ms: u32) -> Option<u64> {
    let KeepalivePlan::Align {
        idle_s,
        intvl_s,
        remaining,
    } = plan
    else {
        return None;
    };
    let cnt = (out + remaining).clamp(1, MAX_KEEPCNT);
    // Setting TCP_KEEPIDLE re-arms the timer for what is left of it, or now.
    let (mut t, mut q) = (u64::from(idle_s).max(now_s), out);
    for _ in 0..=MAX_KEEPCNT {
        let user = user_timeout_ms > 0 && t * 1000 >= u64::from(user_timeout_ms) && q > 0;
        if user || (user_timeout_ms == 0 && q >= cnt) {
            return Some(t);
        }
        q += 1;
        t += u64::from(intvl_s);
    }
    None
}

#[test]
fn the_labs_application_keepalive_is_kept_to_the_second() {
    // 5 s idle, 5 s apart, 4 probes: the application's own kernel aborts 25 s after the last
    // answer. lifeline found it silent 3.2 s in with 14 probes out (fast probes).
    let d = plan(&on(5, 5, 4), &quiet(3_200, 14));
    assert_eq!(
        d.keepalive,
        KeepalivePlan::Align {
            idle_s: 4,
            intvl_s: 1,
            remaining: 21
        },
        "a probe a second from now on, the abort at 25 s"
    );
    assert_eq!(d.abort_after, Some(Duration::from_secs(25)));
    assert_eq!(d.app_deadline, Some(Duration::from_secs(25)));
    assert_eq!(kernel_abort(d.keepalive, 4, 14, 0), Some(25));
    assert_eq!(d.user_timeout_ms, None, "lifeline set no user timeout");
}

#[test]
fn kubelets_go_dialer_and_the_kernel_defaults() {
    // Go's net.Dialer (kubelet): 30 s idle and interval, count 9: 300 s.
    let d = plan(&on(30, 30, 9), &quiet(3_200, 14));
    assert_eq!(d.app_deadline, Some(Duration::from_mins(5)));
    let KeepalivePlan::Align { intvl_s, .. } = d.keepalive else {
        panic!("{d:?}");
    };
    assert_eq!(intvl_s, 3, "still ten times as often as Go's own probes");
    let abort = kernel_abort(d.keepalive, 4, 14, 0).unwrap();
    assert!((300..303).contains(&abort), "{abort}");
    // No values of its own: 7200 s + 9 x 75 s.
    let d = plan(&on(7_200, 75, 9), &quiet(3_200, 14));
    let abort = kernel_abort(d.keepalive, 4, 14, 0).unwrap();
    assert!((7_875..7_875 + 75).contains(&abort), "{abort}: {d:?}");
}

#[test]
fn a_long_idle_with_short_probes_is_kept_at_its_own_instants() {
    // Spread over the 109 probes left, 7,200 s would mean a probe every 67 s, sparser than
    // the application's own 10 s: its own instants instead, exactly its deadline.
    let d = plan(&on(7_200, 10, 9), &quiet(3_200, 14));
    assert_eq!(
        d.keepalive,
        KeepalivePlan::Align {
            idle_s: 7_200,
            intvl_s: 10,
            remaining: 9
        }
    );
    assert_eq!(kernel_abort(d.keepalive, 4, 14, 0), Some(7_290));
}

#[test]
fn no_keepalive_of_its_own_means_no_keepalive_abort_at_all() {
    let off = App {
        keepalive: AppKeepalive::Off,
        ..on(1, 1, 1)
    };
    let d = plan(&off, &quiet(3_200, 14));
    assert_eq!((d.keepalive, d.abort_after), (KeepalivePlan::Off, None));
    assert_eq!(d.entry().map(|e| e.kind), Some(DEFER_OFF));
    let unknown = App {
        keepalive: AppKeepalive::Unknown,
        ..on(1, 1, 1)
    };
    assert_eq!(
        plan(&unknown, &quiet(3_200, 14)).keepalive,
        KeepalivePlan::Off,
        "not known: the safe side"
    );
    // Values past the kernel's limits from here: off rather than sooner.
    let huge = on(32_767, 32_767, 127);
    assert_eq!(plan(&huge, &quiet(3_200, 14)).keepalive, KeepalivePlan::Off);
    // No probe left below the 127 limit.
    assert_eq!(
        plan(&on(30, 30, 9), &quiet(3_200, 124)).keepalive,
        KeepalivePlan::Off
    );
}

#[test]
fn a_deadline_already_past_or_data_in_flight_changes_nothing() {
    // 1 s, 1 s, 5: the application's own stricter values abort at 6 s.
    let d = plan(&on(1, 1, 5), &quiet(7_000, 6));
    assert_eq!(d.keepalive, KeepalivePlan::Due);
    assert!(!d.changes() && d.entry().is_none());
    let mut busy = quiet(3_000, 0);
    busy.unacked = 2;
    assert_eq!(plan(&on(30, 30, 9), &busy).keepalive, KeepalivePlan::Keep);
    // lifeline's --user-timeout goes back to the application's (none) all the same.
    let changed = App {
        user_timeout_changed: true,
        ..on(30, 30, 9)
    };
    let d = plan(&changed, &busy);
    assert_eq!(d.user_timeout_ms, Some(0));
    let e = d.entry().unwrap();
    assert_eq!(
        (e.kind, e.flags, e.user_timeout_ms),
        (DEFER_USER_TIMEOUT, SET_USER_TIMEOUT, 0)
    );
}

#[test]
fn a_user_timeout_aborts_at_the_applications_own_instant() {
    // 5,5,4 with a 12 s user timeout: probes at 5 and 10 s, the abort at 15 s (the first
    // instant past it), whatever the count.
    let mut app = on(5, 5, 4);
    app.user_timeout_ms = Some(12_000);
    let d = plan(&app, &quiet(3_200, 14));
    assert_eq!(d.app_deadline, Some(Duration::from_secs(15)));
    assert_eq!(kernel_abort(d.keepalive, 4, 14, 12_000), Some(15));
    assert_eq!(d.abort_after, Some(Duration::from_secs(15)));
    // A user timeout shorter than the idle time: the first probe still goes out at 5 s,
    // the abort comes at the next instant. Already past 5 s, no fire may come before 10 s.
    app.user_timeout_ms = Some(3_000);
    for now in [3_200, 6_000] {
        let d = plan(&app, &quiet(now, 14));
        assert_eq!(
            kernel_abort(d.keepalive, u64::from(now / 1000), 14, 3_000),
            Some(10),
            "{d:?}"
        );
    }
}

#[test]
fn the_kernels_abort_is_never_before_the_applications_own() {
    // Every plan over a grid of settings, silences and probes out, run through the kernel's
    // rules with up to 4 more probes sent before the pass (the fast phase's last pokes): never sooner than the
    // application's deadline, and within one interval of it where it probes at all.
    let mut checked = 0;
    for (i, v, c) in [
        (1, 1, 1),
        (5, 5, 4),
        (15, 15, 9),
        (30, 30, 9),
        (7_200, 75, 9),
        (60, 1, 127),
        (2, 30, 3),
    ] {
        for u in [0, 3_000, 45_000] {
            let mut app = on(i, v, c);
            app.user_timeout_ms = Some(u);
            let Some(deadline) = app.deadline_s() else {
                continue;
            };
            for quiet_ms in [0, 900, 3_200, 12_500, 61_000] {
                for probes in [1, 10, 14, 40, 120] {
                    let d = plan(&app, &quiet(quiet_ms, probes));
                    let now = u64::from(quiet_ms / 1000);
                    for extra in 0..=4 {
                        let out = u32::from(probes) + extra;
                        let Some(abort) = kernel_abort(d.keepalive, now, out, u) else {
                            assert!(
                                matches!(d.keepalive, KeepalivePlan::Off | KeepalivePlan::Due),
                                "{d:?}"
                            );
                            continue;
                        };
                        let KeepalivePlan::Align { intvl_s, .. } = d.keepalive else {
                            unreachable!("only Align aborts");
                        };
                        let late = u64::from(v.max(intvl_s)) + 1;
                        assert!(
                            abort >= deadline && abort <= deadline.max(now + 1) + late,
                            "{i},{v},{c} u={u} quiet={quiet_ms} out={out}: abort {abort}, deadline {deadline}: {d:?}"
                        );
                        checked += 1;
                    }
                }
            }
        }
    }
    assert!(checked > 300, "{checked}");
}

#[test]
fn originals_make_the_applications_view() {
    let mut o = Original::default();
    o.note(opt::KEEPALIVE, Some(1));
    o.note(opt::IDLE, Some(30));
    o.note(opt::INTVL, Some(30));
    o.note(opt::CNT, Some(9));
    o.note(opt::USER_TIMEOUT, Some(0));
    o.mark(opt::USER_TIMEOUT, 30_000);
    let app = App::from_original(&o);
    assert_eq!(
        app,
        App {
            user_timeout_changed: true,
            ..on(30, 30, 9)
        }
    );
    o.note(opt::KEEPALIVE, Some(0));
    assert_eq!(App::from_original(&o).keepalive, AppKeepalive::Off);
    let unread = Original::default();
    assert_eq!(App::from_original(&unread).keepalive, AppKeepalive::Unknown);
    assert_eq!(App::from_original(&unread).user_timeout_ms, None);
}

#[test]
fn lifelines_values_come_back_and_the_deferral_starts_after_the_evidence() {
    let ours = Keepalive {
        idle_s: 1,
        intvl_s: 1,
        cnt: 20,
        user_timeout_ms: 30_000,
    };
    let mut app = on(30, 30, 9);
    let e = resume(&ours, &app);
    assert_eq!(
        (e.kind, e.idle_s, e.intvl_s, e.cnt, e.flags),
        (DEFER_END, 1, 1, 20, 0)
    );
    app.user_timeout_changed = true;
    let e = resume(&ours, &app);
    assert_eq!((e.flags, e.user_timeout_ms), (SET_USER_TIMEOUT, 30_000));
    let d = plan(&on(5, 5, 4), &quiet(3_200, 14));
    assert_eq!(
        d.entry().map(|e| (e.kind, e.idle_s, e.remaining)),
        Some((DEFER_ALIGN, 4, 21))
    );
    assert_eq!(due_from(12, 20), 14, "the fast probes' last poke");
    assert_eq!(
        due_from(12, 13),
        12,
        "one probe before lifeline's own count"
    );
    assert_eq!(due_from(1, 2), 1);
    assert_eq!(
        due_from(12, 5),
        1,
        "an application's count of 5 ends it before 12 probes: due at the first"
    );
}
