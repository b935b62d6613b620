//! `spec.kamaji.supportedKubernetes.max` against the Kubernetes the pinned Kamaji release can
//! run (issue 31 item 9; `kaas_gitops::model::releases::kamaji`, from clastix/kamaji
//! `internal/upgrade/kubeadm_version.go` at each release, enforced by
//! `internal/webhook/handlers/tcp_version.go`): an error at the field naming the release and
//! its maximum; a release kaas-gitops does not know is a warning.

use crate::common::Repo;

const RANGE: &str = "supportedKubernetes: {min: v1.31.0, max: v1.34.99}";
const TAG: &str = "      tag: 26.8.2-edge\n";

#[test]
fn a_maximum_above_what_kamaji_runs_is_refused_at_the_field() {
    let repo = Repo::example();
    let stderr = repo.assert_edit_refused(
        "kaas.yaml",
        |s| s.replace(RANGE, "supportedKubernetes: {min: v1.31.0, max: v1.37.0}"),
        "kaas.yaml:19:",
        "`v1.37.0` is newer than Kamaji `26.8.2-edge` can run: its webhook refuses a TenantControlPlane above v1.36",
    );
    assert!(stderr.contains("spec.kamaji.supportedKubernetes.max"), "{stderr}");
    assert!(
        stderr.contains(
            "set `max` to at most `v1.36.99`, or move `spec.kamaji.image` to a Kamaji release that runs 1.37"
        ),
        "{stderr}"
    );

    // Every patch of v1.36 is admitted (the webhook ignores the patch since edge-25.11.5).
    repo.replace("kaas.yaml", "max: v1.37.0", "max: v1.36.99");
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

#[test]
fn an_older_release_compares_the_full_version() {
    let repo = Repo::example();
    // edge-25.9.1 builds on kubeadm v1.33.4 and compares full versions.
    repo.replace("kaas.yaml", TAG, "      tag: edge-25.9.1\n");
    let stderr = repo.assert_render_refused(
        "kaas.yaml:19:",
        "`v1.34.99` is newer than Kamaji `edge-25.9.1` can run: its webhook refuses a TenantControlPlane above v1.33.4",
    );
    assert!(stderr.contains("set `max` to at most `v1.33.4`"), "{stderr}");
}

#[test]
fn an_unknown_release_is_a_warning_not_a_refusal() {
    let repo = Repo::example();
    repo.replace("kaas.yaml", TAG, "      tag: 26.9.1-edge\n");
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "warning: Kamaji `26.9.1-edge` is not a release kaas-gitops knows: `supportedKubernetes.max` (v1.34.99) is not checked against the Kubernetes it can run"
        ),
        "{}",
        run.stderr
    );
}

#[test]
fn the_tag_a_policy_pinned_in_kaas_lock_is_checked_too() {
    let repo = Repo::example();
    repo.replace("kaas.yaml", TAG, "      tagPolicy: {pattern: edge}\n");
    let lock = format!(
        "version: 1\nimages:\n- image: docker.io/clastix/kamaji\n  tag: edge-25.9.1\n  digest: \"sha256:{}\"\n",
        "a".repeat(64)
    );
    repo.write("kaas.lock", &lock);
    repo.assert_render_refused(
        "kaas.yaml:19:",
        "`v1.34.99` is newer than Kamaji `edge-25.9.1` (pinned in kaas.lock) can run",
    );
    // A pinned release that runs the range renders.
    repo.replace("kaas.lock", "tag: edge-25.9.1", "tag: 26.8.2-edge");
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
}
