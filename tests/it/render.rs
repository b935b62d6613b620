//! `render` on the example repository: output, idempotence, kustomize builds.

use crate::common::{Repo, kustomize};

#[test]
fn second_render_writes_nothing_and_every_overlay_builds() {
    let repo = Repo::example();
    let first = repo.run(&["render"]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    let before = repo.snapshot();
    let second = repo.run(&["render"]);
    assert_eq!(second.code, 0, "{}", second.stderr);
    assert!(second.stderr.contains("0 written, 0 deleted"), "{}", second.stderr);
    assert_eq!(before, repo.snapshot());
    for dir in [
        "overlays/platform",
        "overlays/tenants/acme",
        "overlays/tenants/globex",
        "overlays/tenants/initech",
        "flux",
    ] {
        let built = kustomize(&repo.path().join(dir));
        assert_eq!(built.code, 0, "kustomize {dir}: {}", built.stderr);
    }
}
