//! `watch` driven as a user drives it: a real watcher process, real saves, Ctrl-C.

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use crate::common::{Repo, bin};

struct Watcher {
    child: Child,
    lines: Receiver<String>,
    seen: Vec<String>,
}

impl Watcher {
    fn start(repo: &Repo, extra: &[&str]) -> Watcher {
        let mut child = bin()
            .arg("--repo")
            .arg(repo.path())
            .arg("watch")
            .args(extra)
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("the binary starts");
        let stderr = child.stderr.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let mut w = Watcher {
            child,
            lines,
            seen: Vec::new(),
        };
        w.wait_for("watching ");
        w
    }

    /// Waits (bounded, generous: this is not a timing test) for a line containing `needle`.
    #[track_caller]
    fn wait_for(&mut self, needle: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(line) = self.lines.recv_timeout(Duration::from_millis(100)) {
                self.seen.push(line.clone());
                if line.contains(needle) {
                    return line;
                }
            }
        }
        panic!("no line with `{needle}`; saw:\n{}", self.seen.join("\n"));
    }

    fn interrupt(mut self) -> i32 {
        let pid = rustix::process::Pid::from_child(&self.child);
        rustix::process::kill_process(pid, rustix::process::Signal::INT).expect("SIGINT");
        let status = self.child.wait().expect("the watcher exits");
        status.code().unwrap_or(-1)
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        let _ = self.child.kill();
    }
}

#[test]
fn renders_on_save_survives_mistakes_and_stops_on_ctrl_c() {
    let repo = Repo::example();
    let mut w = Watcher::start(&repo, &[]);
    assert!(w.seen.iter().any(|l| l.contains("acme created")), "{:?}", w.seen);
    let kcp = "overlays/tenants/acme/kamajicontrolplane-acme.yaml";
    assert!(repo.read(kcp).contains("replicas: 2"));

    // A save renders that tenant, and only that tenant.
    let spec = repo
        .read("tenants/acme.yaml")
        .replace("replicas: 2\n    dataStore", "replicas: 3\n    dataStore");
    repo.write("tenants/acme.yaml", &spec);
    let line = w.wait_for("render: acme changed");
    assert!(!line.contains("globex"), "{line}");
    assert!(repo.read(kcp).contains("replicas: 3"));

    // An invalid file: the same pointed error as `render`, nothing written, still running.
    let before = repo.snapshot();
    repo.write(
        "tenants/acme.yaml",
        &spec.replace("replicas: 3\n    dataStore", "replica: 3\n    dataStore"),
    );
    w.wait_for("unknown field `replica`");
    w.wait_for("--> tenants/acme.yaml:");
    w.wait_for("nothing was written");
    let mut after = repo.snapshot();
    after.remove("tenants/acme.yaml");
    let mut expected = before.clone();
    expected.remove("tenants/acme.yaml");
    assert_eq!(expected, after, "an invalid save changed the overlays");

    // Fixed again: renders again.
    repo.write(
        "tenants/acme.yaml",
        &spec.replace("replicas: 3\n    dataStore", "replicas: 4\n    dataStore"),
    );
    w.wait_for("render: acme changed");
    assert!(repo.read(kcp).contains("replicas: 4"));

    // A new tenant file renders a new overlay; deleting one prunes it.
    repo.write(
        "tenants/zeta.yaml",
        &repo.read("tenants/initech.yaml").replace("name: initech", "name: zeta"),
    );
    w.wait_for("zeta created");
    assert!(repo.path().join("overlays/tenants/zeta/cluster-zeta.yaml").exists());
    std::fs::remove_file(repo.path().join("tenants/zeta.yaml")).unwrap();
    w.wait_for("zeta deleted");
    assert!(!repo.path().join("overlays/tenants/zeta").exists());

    // Editor noise alone never renders.
    let renders = w.seen.iter().filter(|l| l.starts_with("render:")).count();
    repo.write("tenants/.acme.yaml.swp", "swap");
    repo.write("tenants/4913", "");
    repo.write("tenants/acme.yaml~", "backup");
    // A real save after the noise: the next render line must be this one.
    repo.write(
        "tenants/initech.yaml",
        &repo.read("tenants/initech.yaml").replace("replicas: 1", "replicas: 2"),
    );
    let line = w.wait_for("render:");
    assert!(line.contains("initech changed"), "{line}");
    assert_eq!(
        w.seen.iter().filter(|l| l.starts_with("render:")).count(),
        renders + 1,
        "{:?}",
        w.seen
    );

    let code = w.interrupt();
    assert_eq!(code, 0);
    // The next render finds nothing to do: the watcher left a complete tree.
    let check = repo.run(&["render", "--check"]);
    assert_eq!(check.code, 0, "{}", check.stdout);
}

#[test]
fn a_platform_change_renders_every_tenant() {
    let repo = Repo::example();
    let mut w = Watcher::start(&repo, &[]);
    let platform = repo.read("kaas.yaml").replace("interval: 10m", "interval: 5m");
    repo.write("kaas.yaml", &platform);
    let line = w.wait_for("render:");
    for unit in ["acme changed", "globex changed", "initech changed", "platform changed"] {
        assert!(line.contains(unit), "{unit} missing in {line}");
    }
    assert_eq!(w.interrupt(), 0);
}

/// Each render of `watch` takes the repository lock (issue 9): while another run holds it, the
/// watcher says it waits and writes nothing; it renders as soon as the lock is free.
#[test]
fn a_render_waits_for_another_run_holding_the_lock() {
    let repo = Repo::example();
    let mut w = Watcher::start(&repo, &["--lock-timeout", "60"]);
    let kcp = "overlays/tenants/acme/kamajicontrolplane-acme.yaml";
    let guard = kaas_gitops::repo::process_lock::acquire(repo.path(), Duration::ZERO).expect("the lock");
    let spec = repo.read("tenants/acme.yaml").replace("replicas: 2", "replicas: 3");
    repo.write("tenants/acme.yaml", &spec);
    w.wait_for(&format!(
        "watching: waiting for another kaas-gitops run (pid {}) to finish",
        std::process::id()
    ));
    assert!(
        repo.read(kcp).contains("replicas: 2"),
        "written while another run held the lock"
    );
    drop(guard);
    w.wait_for("render: acme changed");
    assert!(repo.read(kcp).contains("replicas: 3"));
    assert_eq!(w.interrupt(), 0);
}

#[test]
fn shows_the_warnings_render_shows() {
    // Issue 20: `watch` printed no warning, not even that Flux would delete a tenant's etcd
    // snapshots. The deletion here happens on the first save after the watcher started.
    let repo = Repo::example();
    assert_eq!(repo.run(&["render"]).code, 0);
    repo.decommission("globex");
    assert_eq!(repo.run(&["render"]).code, 0);
    let mut w = Watcher::start(&repo, &[]);
    std::fs::remove_file(repo.path().join("tenants/globex.yaml")).unwrap();
    let line = w.wait_for("Flux will delete the PersistentVolumeClaim `globex-etcd-backups`");
    assert!(
        line.starts_with("warning: deleting `overlays/tenants/globex/"),
        "{line}"
    );
    w.wait_for("render: globex deleted");
    // Unpinned images: the same warning as `render`, and --locked refuses them as render does.
    assert_eq!(w.interrupt(), 0);
    let mut w = Watcher::start(&repo, &["--locked"]);
    let acme = repo.read("tenants/acme.yaml");
    repo.write("tenants/acme.yaml", &format!("{acme}# saved again\n"));
    w.wait_for("has no digest in kaas.lock (--locked)");
    w.wait_for("nothing was written");
    assert_eq!(w.interrupt(), 0);
}
