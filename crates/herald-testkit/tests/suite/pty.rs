//! `PtySession`: a program under a pseudo-terminal sees a terminal (cursor
//! position reports, device attributes, its size), receives typed input and
//! leaves no process behind.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;
use std::time::Duration;

use herald_testkit::is_gone;
use herald_testkit::pty::{PtySession, keys};

const WAIT: Duration = Duration::from_secs(10);

fn bash(script: &str) -> Command {
    let mut cmd = Command::new("bash");
    cmd.args(["--norc", "--noprofile", "-c", script]);
    cmd
}

#[test]
fn a_cursor_position_request_is_answered_and_typed_input_arrives() {
    // The cursor sits after "ab" on the third row when the program asks.
    let session = PtySession::spawn(
        bash(
            r#"stty -echo -icanon; printf '\n\nab\033[6n'; IFS= read -r -d R pos; printf '\ngot %s\n' "${pos#*[}"; IFS= read -r line; echo "you said $line""#,
        ),
        24,
        80,
    )
    .unwrap();
    session
        .wait_for(|text| text.contains("got 3;3"), WAIT)
        .unwrap();
    session.send_str("hello there");
    session.send(keys::ENTER);
    let text = session
        .wait_for(|text| text.contains("you said hello there"), WAIT)
        .unwrap();
    assert!(text.contains("got 3;3\nyou said hello there"), "{text}");
    let status = session.wait_exit(WAIT).expect("bash exits");
    assert!(status.success(), "{status:?}");
}

#[test]
fn device_attributes_are_answered_and_the_program_has_a_terminal_of_the_given_size() {
    let session = PtySession::spawn(
        bash(
            r#"stty -echo -icanon; printf '\033[c'; IFS= read -r -d c da; echo "da ${da#*[}"; echo "size $(stty size) term $TERM"; [ -t 0 ] && [ -t 1 ] && [ -t 2 ] && echo tty-all; ps -o sid= -p $$ | tr -d ' '"#,
        ),
        30,
        100,
    )
    .unwrap();
    let text = session
        .wait_for(|text| text.contains("tty-all"), WAIT)
        .unwrap();
    assert!(text.contains("da ?1;2"), "{text}");
    assert!(text.contains("size 30 100 term xterm-256color"), "{text}");
    // The program leads a session of its own.
    session
        .wait_for(
            |text| text.contains(&format!("tty-all\n{}", session.pid())),
            WAIT,
        )
        .unwrap();
}

#[test]
fn resizing_reaches_the_program_and_the_screen() {
    let session = PtySession::spawn(
        bash(
            r#"stty -echo; trap 'echo "now $(stty size)"' WINCH; echo ready; while :; do sleep 0.05; done"#,
        ),
        24,
        80,
    )
    .unwrap();
    session
        .wait_for(|text| text.contains("ready"), WAIT)
        .unwrap();
    session.resize(40, 120).unwrap();
    session
        .wait_for(|text| text.contains("now 40 120"), WAIT)
        .unwrap();
    assert_eq!(session.screen().split('\n').count(), 40);
}

#[test]
fn lines_that_scroll_off_stay_in_the_scrollback_and_a_paste_is_bracketed() {
    let session = PtySession::spawn(
        bash(
            r#"stty -echo raw; for i in $(seq 1 50); do printf 'line %s\r\n' $i; done; printf 'done\r\n'; head -c 30 | od -An -c | tr -s ' \n' ' '; printf '\r\nend\r\n'"#,
        ),
        10,
        120,
    )
    .unwrap();
    session
        .wait_for(|text| text.contains("done"), WAIT)
        .unwrap();
    let screen = session.screen();
    assert!(!screen.contains("line 1\n"), "{screen}");
    let all = session.scrollback_and_screen();
    let numbers: Vec<&str> = all.lines().filter(|l| l.starts_with("line ")).collect();
    assert_eq!(numbers.len(), 50, "{all}");
    assert_eq!(numbers[0], "line 1");
    assert_eq!(numbers[49], "line 50");
    session.paste("a\nb");
    // 6 + 3 + 6 bytes of paste; pad to the 30 bytes `head` waits for.
    session.send(&[b'x'; 15]);
    let text = session.wait_for(|text| text.contains("end"), WAIT).unwrap();
    assert!(
        text.contains(" 033 [ 2 0 0 ~ a \\r b 033 [ 2 0 1 ~ x "),
        "{text}"
    );
    assert!(String::from_utf8_lossy(&session.raw()).contains("line 50"));
}

#[test]
fn dropping_the_session_kills_the_program_and_what_it_started() {
    let session = PtySession::spawn(
        // With job control the background job gets a process group of its
        // own: only the session scan finds it.
        bash(r#"set -m; sleep 1000 & echo "bg $!"; echo started; wait"#),
        24,
        80,
    )
    .unwrap();
    let text = session
        .wait_for(|text| text.contains("started"), WAIT)
        .unwrap();
    let bg: i32 = text
        .lines()
        .find_map(|l| l.strip_prefix("bg "))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let pid = session.pid();
    assert!(!is_gone(pid) && !is_gone(bg));
    drop(session);
    assert!(is_gone(pid), "the program survived the drop");
    let t0 = std::time::Instant::now();
    while !is_gone(bg) {
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "the program's background process survived the drop"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn ctrl_helpers_and_a_timeout_report_the_screen() {
    assert_eq!(keys::ctrl('a'), vec![1]);
    assert_eq!(keys::ctrl('C'), keys::CTRL_C.to_vec());
    let session = PtySession::spawn(bash("echo visible; sleep 5"), 5, 20).unwrap();
    session
        .wait_for(|text| text.contains("visible"), WAIT)
        .unwrap();
    let err = session
        .wait_for(|text| text.contains("never"), Duration::from_millis(100))
        .unwrap_err();
    assert!(
        err.contains("visible") && err.contains("still running"),
        "{err}"
    );
    assert!(session.wait_exit(Duration::from_millis(50)).is_none());
}

#[test]
fn after_wait_exit_the_screen_holds_everything_the_program_wrote() {
    let session = PtySession::spawn(bash("seq 1 1500; echo last-line"), 24, 80).unwrap();
    let status = session.wait_exit(WAIT).expect("bash exits");
    assert!(status.success());
    // No waiting for the screen: the output was read before wait_exit returned.
    let text = session.scrollback_and_screen();
    assert!(text.contains("1499\n1500\nlast-line"), "{text}");
}
