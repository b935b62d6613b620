//! One test per kind of bad input: exit 1, a message naming file:line:column, and nothing on
//! disk changed.

// A valid tenant to break in one place.
use crate::common::PROXMOX_TENANT as GOOD;
use crate::common::Repo;

/// Renders the example once, adds `rel` with `content`, renders again and checks the failure.
#[track_caller]
fn refused(rel: &str, content: &[u8], location: &str, message: &str) -> String {
    let repo = Repo::example();
    assert_eq!(repo.run(&["render"]).code, 0);
    let p = repo.path().join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, content).unwrap();
    repo.assert_render_refused(location, message)
}

fn tenant(edit: impl Fn(&str) -> String) -> Vec<u8> {
    edit(GOOD).into_bytes()
}

/// Fails unless the error reported at `location` (`path:line:column`) says each of `lines`.
#[track_caller]
fn assert_error_at(stderr: &str, location: &str, lines: &[&str]) {
    let block = stderr
        .split("\n\n")
        .find(|b| b.contains(&format!("--> {location}\n")))
        .unwrap_or_else(|| panic!("no error at {location} in\n{stderr}"));
    for line in lines {
        assert!(
            block.contains(line),
            "`{line}` is not in the error at {location}:\n{block}"
        );
    }
}

#[test]
fn good_fixture_renders() {
    let repo = Repo::example();
    repo.write("tenants/bad.yaml", GOOD);
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    // What the user sees: the tenant created with its files, four tenants rendered, no error
    // (the only warning is the example's unpinned images).
    assert!(
        run.stderr
            .lines()
            .any(|l| l.starts_with("bad ") && l.contains(" created (")),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("rendered 4 tenant(s):"), "{}", run.stderr);
    assert!(!run.stderr.contains("error"), "{}", run.stderr);
    assert_eq!(run.stderr.matches("warning:").count(), 1, "{}", run.stderr);
    let cluster = repo.object("overlays/tenants/bad/cluster-bad.yaml");
    assert_eq!(cluster["metadata"]["name"], "bad");
}

#[test]
fn unknown_key_names_the_valid_ones() {
    let err = refused(
        "tenants/bad.yaml",
        &tenant(|t| t.replace("      replicas: 1", "      replica: 1")),
        "tenants/bad.yaml:17:7",
        "unknown field `replica`",
    );
    assert!(
        err.contains(
            "valid keys here: autoscaling, failureDomain, labels, machine, name, os, proxmox, replicas, taints"
        ),
        "{err}"
    );
}

#[test]
fn duplicate_key() {
    refused(
        "tenants/bad.yaml",
        &tenant(|t| t.replace("    version: v1.33.4\n", "    version: v1.33.4\n    version: v1.33.5\n")),
        "tenants/bad.yaml:8:5",
        "duplicate key `version`",
    );
}

#[test]
fn anchors_and_aliases() {
    let err = refused(
        "tenants/bad.yaml",
        &tenant(|t| {
            t.replace(
                "dnsServers: [10.0.0.53]",
                "dnsServers: &dns [10.0.0.53]\n      allowedNodes: *dns",
            )
        }),
        "tenants/bad.yaml:13:19",
        "YAML anchors (`&name`) are not allowed",
    );
    assert!(err.contains("--> tenants/bad.yaml:14:21"), "{err}");
    assert!(err.contains("YAML aliases (`*name`) are not allowed"), "{err}");
}

#[test]
fn tab_indentation() {
    refused(
        "tenants/bad.yaml",
        &tenant(|t| t.replace("  name: bad", "\tname: bad")),
        "tenants/bad.yaml:4:1",
        "tab used for indentation",
    );
}

#[test]
fn non_utf8() {
    let mut bytes = GOOD.as_bytes().to_vec();
    let at = GOOD.find("pve").unwrap();
    bytes[at] = 0xff;
    refused(
        "tenants/bad.yaml",
        &bytes,
        "tenants/bad.yaml:11:19",
        "file is not valid UTF-8",
    );
}

#[test]
fn file_over_one_mib() {
    let big = format!("{GOOD}# {}\n", "x".repeat(1024 * 1024));
    refused(
        "tenants/bad.yaml",
        big.as_bytes(),
        "tenants/bad.yaml",
        "file is larger than 1024 KiB",
    );
}

#[test]
fn version_written_as_a_float() {
    let err = refused(
        "tenants/bad.yaml",
        &tenant(|t| t.replace("version: v1.33.4", "version: 1.30")),
        "tenants/bad.yaml:7:14",
        "the version `1.30` is a YAML number, not a string",
    );
    assert!(err.contains("quote it"), "{err}");
}

#[test]
fn name_must_equal_the_file_stem() {
    refused(
        "tenants/other.yaml",
        GOOD.as_bytes(),
        "tenants/other.yaml:4:9",
        "`metadata.name` is `bad` but the file is `other.yaml`",
    );
}

#[test]
fn name_must_be_a_short_dns_label() {
    let long = "a".repeat(41);
    refused(
        &format!("tenants/{long}.yaml"),
        &tenant(|t| t.replace("name: bad", &format!("name: {long}"))),
        &format!("tenants/{long}.yaml:4:9"),
        "is 41 characters long; the limit is 40",
    );
    refused(
        "tenants/Bad_1.yaml",
        &tenant(|t| t.replace("name: bad", "name: Bad_1")),
        "tenants/Bad_1.yaml:4:9",
        "`Bad_1` is not a DNS-1035 label",
    );
}

#[test]
fn reserved_names() {
    for name in [
        "platform",
        "default",
        "kube-system",
        "capi-system",
        "kamaji-system",
        "flux-system",
    ] {
        refused(
            &format!("tenants/{name}.yaml"),
            &tenant(|t| t.replace("name: bad", &format!("name: {name}"))),
            &format!("tenants/{name}.yaml:4:9"),
            &format!("`{name}` is reserved"),
        );
    }
}

#[test]
fn vip_used_by_another_tenant() {
    // acme's endpoint in the example is 10.0.4.10.
    refused(
        "tenants/bad.yaml",
        &tenant(|t| {
            t.replace(
                "  infrastructure:",
                "  controlPlane:\n    endpoint: {host: 10.0.4.10}\n  infrastructure:",
            )
        }),
        "tenants/bad.yaml:9:22",
        "the VIP 10.0.4.10 is already the endpoint of tenant `acme`",
    );
}

#[test]
fn vip_that_is_not_an_ip() {
    refused(
        "tenants/bad.yaml",
        &tenant(|t| {
            t.replace(
                "  infrastructure:",
                "  controlPlane:\n    endpoint: {host: api.example.com}\n  infrastructure:",
            )
        }),
        "tenants/bad.yaml:9:22",
        "`api.example.com` is not an IP address",
    );
}

#[test]
fn cidrs_invalid_or_overlapping() {
    refused(
        "tenants/bad.yaml",
        &tenant(|t| {
            t.replace(
                "  infrastructure:",
                "  network:\n    pods: [10.96.0.0/16]\n  infrastructure:",
            )
        }),
        "tenants/bad.yaml:9:12",
        "pod CIDR `10.96.0.0/16` overlaps service CIDR `10.96.0.0/12`",
    );
    refused(
        "tenants/bad.yaml",
        &tenant(|t| {
            t.replace(
                "  infrastructure:",
                "  network:\n    services: [10.96.0.0/33]\n  infrastructure:",
            )
        }),
        "tenants/bad.yaml:9:16",
        "`10.96.0.0/33` is not a CIDR",
    );
}

/// A service range must hold CoreDNS's address, the 10th (kubeadm's `GetDNSIP`, rendered as the
/// control plane's `addons.coreDNS.dnsServiceIPs`), and kube-apiserver takes one range, or two
/// of different families (kubernetes v1.36.3 `cmd/kube-apiserver/app/options/validation.go`).
#[test]
fn service_cidrs_too_small_or_of_one_family() {
    let with_services = |services: &'static str| {
        tenant(move |t| {
            t.replace(
                "  infrastructure:",
                &format!("  network:\n    services: {services}\n  infrastructure:"),
            )
        })
    };
    let stderr = refused(
        "tenants/bad.yaml",
        &with_services("[10.96.0.0/29]"),
        "tenants/bad.yaml:9:16",
        "service CIDR `10.96.0.0/29` has 8 addresses: CoreDNS's Service takes the one at index 10",
    );
    assert!(stderr.contains("use a /28 or larger"), "{stderr}");
    let stderr = refused(
        "tenants/bad.yaml",
        &with_services("[fd00:96::/125]"),
        "tenants/bad.yaml:9:16",
        "service CIDR `fd00:96::/125` has 8 addresses",
    );
    assert!(stderr.contains("use a /124 or larger"), "{stderr}");
    refused(
        "tenants/bad.yaml",
        &with_services("[10.96.0.0/16, 10.97.0.0/16]"),
        "tenants/bad.yaml:9:30",
        "`10.97.0.0/16` is of the same IP family as `10.96.0.0/16`",
    );
    refused(
        "tenants/bad.yaml",
        &with_services("[10.96.0.0/16, fd00::/108, 10.97.0.0/16]"),
        "tenants/bad.yaml:9:42",
        "more than two service CIDRs",
    );
}

#[test]
fn autoscaling_bounds() {
    refused(
        "tenants/bad.yaml",
        &tenant(|t| {
            t.replace(
                "      replicas: 1",
                "      autoscaling: {min: 4, max: 2}\n      machine: {cpus: 2, memoryMiB: 4096}",
            )
        }),
        "tenants/bad.yaml:17:26",
        "`autoscaling.min` (4) is greater than `autoscaling.max` (2)",
    );
    refused(
        "tenants/bad.yaml",
        &tenant(|t| {
            t.replace(
                "      replicas: 1",
                "      replicas: 1\n      autoscaling: {min: 1, max: 2}",
            )
        }),
        "tenants/bad.yaml:18:20",
        "`replicas` and `autoscaling` are exclusive",
    );
    refused(
        "tenants/bad.yaml",
        &tenant(|t| t.replace("      replicas: 1", "      autoscaling: {min: 0, max: 2}")),
        "tenants/bad.yaml:17:26",
        "a pool that scales from zero needs `machine.cpus` and `machine.memoryMiB`",
    );
}

#[test]
fn kubernetes_version_outside_the_supported_range() {
    refused(
        "tenants/bad.yaml",
        &tenant(|t| t.replace("version: v1.33.4", "version: v1.29.0")),
        "tenants/bad.yaml:7:14",
        "Kubernetes v1.29.0 is outside the platform's supported range",
    );
}

#[test]
fn shared_datastore_must_be_declared() {
    refused(
        "tenants/bad.yaml",
        &tenant(|t| {
            t.replace(
                "  infrastructure:",
                "  controlPlane:\n    dataStore: {shared: nope}\n  infrastructure:",
            )
        }),
        "tenants/bad.yaml:9:25",
        "the platform declares no DataStore `nope`",
    );
}

#[test]
fn inline_secrets_are_refused() {
    refused(
        "tenants/bad.yaml",
        &tenant(|t| {
            t.replace(
                "  infrastructure:",
                "  controlPlane:\n    apiServer:\n      extraArgs: [\"--token=s3cr3t\"]\n  infrastructure:",
            )
        }),
        "tenants/bad.yaml:10:19",
        "the flag `--token` carries a literal secret",
    );
    refused(
        "tenants/bad.yaml",
        &tenant(|t| {
            t.replace(
                "      sourceNode: pve",
                "      sourceNode: pve\n      password: hunter2",
            )
        }),
        "tenants/bad.yaml:12:17",
        "`password` holds a literal secret",
    );
}

#[test]
fn unknown_provider_lists_the_known_ones() {
    let err = refused(
        "tenants/bad.yaml",
        &tenant(|t| t.replace("provider: proxmox", "provider: gcp")),
        "tenants/bad.yaml:9:15",
        "`spec.infrastructure.provider` is `gcp`, which is not one of its values",
    );
    assert!(
        err.contains("valid values (exact spelling): `proxmox`, `hetzner`, `kubevirt`"),
        "{err}"
    );
}

#[test]
fn second_document_and_yml_extension() {
    refused(
        "tenants/bad.yaml",
        format!("{GOOD}---\nkind: Tenant\n").as_bytes(),
        "tenants/bad.yaml:18:1",
        "a second YAML document in one file",
    );
    refused(
        "tenants/bad.yml",
        GOOD.as_bytes(),
        "tenants/bad.yml",
        "`tenants/bad.yml` ends in `.yml`",
    );
}

#[test]
fn exhausted_vip_pool() {
    let repo = Repo::example();
    repo.replace("kaas.yaml", "10.0.4.100-10.0.4.199", "10.0.4.100-10.0.4.101");
    // globex and initech take both addresses; a third tenant finds none.
    assert_eq!(repo.run(&["render"]).code, 0);
    repo.write("tenants/bad.yaml", GOOD);
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("the platform's VIP pools are exhausted"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("--> tenants/bad.yaml"), "{}", run.stderr);
}

#[test]
fn bad_platform_file() {
    let repo = Repo::example();
    repo.replace("kaas.yaml", "  dataStores: [default]", "  dataStore: [default]");
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("unknown field `dataStore`"), "{}", run.stderr);
    assert!(run.stderr.contains("--> kaas.yaml:"), "{}", run.stderr);
}

#[test]
fn every_error_of_a_run_is_reported_together() {
    let repo = Repo::example();
    repo.write(
        "tenants/one.yaml",
        &GOOD
            .replace("name: bad", "name: one")
            .replace("version: v1.33.4", "version: 1.30"),
    );
    repo.write(
        "tenants/two.yaml",
        &GOOD
            .replace("name: bad", "name: two")
            .replace("replicas: 1", "replica: 1"),
    );
    repo.write(
        "tenants/three.yaml",
        &GOOD.replace("name: bad", "name: three").replace(
            "      replicas: 1",
            "      autoscaling: {min: 3, max: 1}\n      machine: {cpus: 1, memoryMiB: 1024}",
        ),
    );
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 1);
    insta::assert_snapshot!(run.stderr);
}

#[test]
fn missing_platform_file() {
    let repo = Repo::empty();
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("no `kaas.yaml`"), "{}", run.stderr);
    assert!(run.stderr.contains("kaas-gitops init"), "{}", run.stderr);
}

#[test]
fn proxmox_needs_an_address_pool() {
    // ProxmoxCluster's CEL rule refuses a cluster without ipv4Config or ipv6Config.
    refused(
        "tenants/bad.yaml",
        &tenant(|t| {
            t.replace(
                "      ipv4: {addresses: [10.0.5.10-10.0.5.60], gateway: 10.0.5.1, prefix: 24}\n",
                "",
            )
        }),
        "tenants/bad.yaml:10:5",
        "the Proxmox block needs an `ipv4` address pool",
    );
}

#[test]
fn every_shape_error_of_one_file_is_reported_at_its_field() {
    let repo = Repo::example();
    let bad = GOOD
        .replace("    version: v1.33.4", "    version: 1.30")
        .replace("      templateID: 100", "      templateID: abc")
        .replace("      dnsServers: [10.0.0.53]\n", "")
        .replace(
            "      replicas: 1",
            "      replica: 1\n  access:\n    adminGroups: admins",
        )
        + "  controlPlane:\n    addons: {coreDNS: yes}\n    service: {type: loadbalancer}\n";
    repo.write("tenants/bad.yaml", &bad);
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let expected = [
        (
            "tenants/bad.yaml:7:14",
            "`spec.kubernetes.version` must be a string, not 1.3",
        ),
        ("tenants/bad.yaml:7:14", "hint: quote it: `version: \"1.30\"`"),
        (
            "tenants/bad.yaml:10:5",
            "missing field `dnsServers` in `spec.infrastructure.proxmox`",
        ),
        (
            "tenants/bad.yaml:12:19",
            "`spec.infrastructure.proxmox.templateID` must be a whole number, not a string (\"abc\")",
        ),
        ("tenants/bad.yaml:16:7", "unknown field `replica`"),
        (
            "tenants/bad.yaml:16:7",
            "hint: did you mean `replicas`? valid keys here: autoscaling",
        ),
        (
            "tenants/bad.yaml:18:18",
            "`spec.access.adminGroups` must be a list, not a string (\"admins\")",
        ),
        (
            "tenants/bad.yaml:20:23",
            "`spec.controlPlane.addons.coreDNS` must be true or false, not a string (\"yes\")",
        ),
        (
            "tenants/bad.yaml:21:21",
            "`spec.controlPlane.service.type` is `loadbalancer`, which is not one of its values",
        ),
    ];
    for (location, message) in expected {
        assert_error_at(&run.stderr, location, &[message]);
    }
    assert!(
        run.stderr.contains("error: 7 problem(s) found; nothing was written"),
        "{}",
        run.stderr
    );
    assert!(!repo.path().join("overlays").exists());
}

#[test]
fn a_file_named_unlike_its_tenant_gets_a_hint_that_can_be_followed() {
    // `(file, contents, expected hint)`: each run has the example's acme, globex and initech.
    let cases = [
        (
            "tenants/acme2.yaml",
            GOOD.replace("name: bad", "name: acme"),
            "hint: `tenants/acme.yaml` is tenant `acme` already; set `name: acme2` here if this is another tenant, or delete one of the two files",
        ),
        (
            "tenants/Acme.yaml",
            GOOD.replace("name: bad", "name: acme"),
            "hint: `tenants/acme.yaml` is tenant `acme` already; delete one of the two files, or give this tenant its own name and name the file after it",
        ),
        (
            "tenants/Hooli.yaml",
            GOOD.replace("name: bad", "name: hooli"),
            "hint: rename the file to `tenants/hooli.yaml`: a tenant's file is named after it",
        ),
        (
            "tenants/hooli2.yaml",
            GOOD.replace("name: bad", "name: hooli"),
            "hint: rename the file to `tenants/hooli.yaml`, or set `name: hooli2`",
        ),
        (
            "tenants/acme.yml",
            GOOD.replace("name: bad", "name: acme"),
            "hint: `tenants/acme.yaml` exists too: keep one of the two files (named `.yaml`)",
        ),
        (
            "tenants/Hooli.YAML",
            GOOD.replace("name: bad", "name: hooli"),
            "hint: tenant files end in `.yaml`, lower-case, as tenant names are: rename it to `tenants/hooli.yaml`",
        ),
    ];
    for (rel, text, hint) in cases {
        let repo = Repo::example();
        repo.write(rel, &text);
        let run = repo.run(&["render"]);
        assert_eq!(run.code, 1, "{rel}: {}", run.stderr);
        assert!(run.stderr.contains(hint), "{rel}: no `{hint}` in\n{}", run.stderr);
    }
    // An invalid name gets its own error, and no hint to name the file after it.
    let repo = Repo::example();
    repo.write("tenants/initech2.yaml", &GOOD.replace("name: bad", "name: Initech"));
    let run = repo.run(&["render"]);
    assert!(
        run.stderr.contains("`Initech` is not a DNS-1035 label"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("but the file is"), "{}", run.stderr);
}

#[test]
fn shape_errors_say_each_mistake_once_in_the_users_words() {
    let repo = Repo::example();
    let typos = GOOD
        .replace(
            "  name: bad",
            "  nmae: typos\n  labels:\n    node-role.kubernetes.io/node: 1",
        )
        .replace("      templateID: 100", "      templateID: 99999999999")
        .replace("gateway: 10.0.5.1, ", "")
        .replace(
            "    - name: md-0\n      replicas: 1",
            "    - replicas: 1.5\n      machine:\n        cpus: 2\n    - md-1",
        );
    repo.write("tenants/typos.yaml", &typos);
    repo.write("tenants/list.yaml", "- a\n");
    repo.write("tenants/comment.yaml", "# nothing yet\n");
    repo.write("tenants/platform.yaml", &repo.read("kaas.yaml"));
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let expect = |location: &str, lines: &[&str]| assert_error_at(&run.stderr, location, lines);
    // A typo of a required key: one error, not "unknown" plus "missing".
    expect(
        "tenants/typos.yaml:4:3",
        &["unknown field `nmae`", "hint: did you mean `name`?"],
    );
    assert!(
        !run.stderr.contains("missing field `name` in `metadata`"),
        "{}",
        run.stderr
    );
    // A label key holds dots: the hint quotes the key as written.
    expect(
        "tenants/typos.yaml:6:35",
        &[
            "must be a string, not 1",
            "hint: quote it: `node-role.kubernetes.io/node: \"1\"`",
        ],
    );
    expect(
        "tenants/typos.yaml:14:19",
        &["is 99999999999; the most allowed is 4294967295"],
    );
    expect(
        "tenants/typos.yaml:16:7",
        &["missing field `gateway` in `spec.infrastructure.proxmox.ipv4`"],
    );
    expect(
        "tenants/typos.yaml:18:7",
        &["missing field `name` in `spec.workers[0]`"],
    );
    expect(
        "tenants/typos.yaml:18:17",
        &[
            "`spec.workers[0].replicas` must be a whole number, not 1.5",
            "hint: write it without a fraction",
        ],
    );
    expect(
        "tenants/typos.yaml:21:7",
        &["`spec.workers[1]` must be a mapping, not a string (\"md-1\")"],
    );
    assert_eq!(
        run.stderr.matches("missing field `name` in `spec.workers[0]`").count(),
        1,
        "{}",
        run.stderr
    );
    // Whole files: one error each.
    expect(
        "tenants/list.yaml:1:1",
        &["the file is a list, not a mapping of keys", "`kind: Tenant`"],
    );
    assert!(
        run.stderr
            .contains("error: the file is empty\n  --> tenants/comment.yaml"),
        "{}",
        run.stderr
    );
    expect(
        "tenants/platform.yaml:4:7",
        &[
            "`kind` is `Platform`, but this file holds a Tenant",
            "`kind: Platform` is kaas.yaml's",
        ],
    );
    assert!(!run.stderr.contains("unknown field `flux`"), "{}", run.stderr);
    assert!(
        !run.stderr.contains("expected mapping"),
        "serde's copy of a whole-file error:\n{}",
        run.stderr
    );
}

#[test]
fn a_duplicate_key_does_not_hide_the_files_other_mistakes() {
    let repo = Repo::example();
    let bad = GOOD
        .replace(
            "    version: v1.33.4",
            "    verison: x\n    version: v1.33.4\n    version: v1.33.5",
        )
        .replace("      templateID: 100", "      templateID: abc");
    repo.write("tenants/bad.yaml", &bad);
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_error_at(&run.stderr, "tenants/bad.yaml:7:5", &["unknown field `verison`"]);
    assert_error_at(&run.stderr, "tenants/bad.yaml:9:5", &["duplicate key `version`"]);
    assert_error_at(
        &run.stderr,
        "tenants/bad.yaml:14:19",
        &["`spec.infrastructure.proxmox.templateID` must be a whole number"],
    );
    assert!(run.stderr.contains("error: 3 problem(s) found"), "{}", run.stderr);
}

#[test]
fn a_long_value_of_any_text_is_shown_cut_not_a_crash() {
    let repo = Repo::example();
    let value = format!("x{}", "é".repeat(80));
    repo.write(
        "tenants/bad.yaml",
        &GOOD.replace("      templateID: 100", &format!("      templateID: \"{value}\"")),
    );
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let shown = format!("\"x{}...", "é".repeat(55));
    assert_error_at(
        &run.stderr,
        "tenants/bad.yaml:12:19",
        &[&format!("must be a whole number, not a string ({shown})")],
    );
}

#[test]
fn a_cron_schedule_out_of_range_is_refused_at_its_line() {
    // Five fields of the right shape whose values no CronJob accepts (minute 99, weekday `zz`):
    // the API server would refuse the CronJob, so render refuses the schedule, in kaas.yaml and in
    // a tenant alike.
    let repo = crate::common::Repo::example();
    let err = repo.assert_edit_refused(
        "kaas.yaml",
        |t| t.replace("schedule: \"0 */6 * * *\"", "schedule: \"99 99 99 99 zz\""),
        "kaas.yaml:48:15",
        "`99 99 99 99 zz` is not a cron schedule",
    );
    assert_error_at(
        &err,
        "kaas.yaml:48:15",
        &[
            "= field: `spec.backups.schedule`",
            "= hint: five fields, minute hour day-of-month month day-of-week",
        ],
    );
    let repo = crate::common::Repo::example();
    let err = repo.assert_edit_refused(
        "tenants/acme.yaml",
        |t| t.replace("schedule: \"0 * * * *\"", "schedule: \"0 0 * 13 *\""),
        "tenants/acme.yaml:15:86",
        "`0 0 * 13 *` is not a cron schedule",
    );
    assert_error_at(&err, "tenants/acme.yaml:15:86", &["= hint: five fields"]);
}

/// `--color always` paints only the words `error` and `warning` (and an error's first line):
/// with the escapes stripped the text is exactly the plain one. `--color auto` paints nothing
/// when stderr is not a terminal (here a pipe) or when `NO_COLOR` is set.
#[test]
fn colour_paints_the_words_and_nothing_else() {
    let repo = Repo::example();
    // A warning (the example's unpinned images) on a good render, an error on a bad one.
    let good = |color: &str, no_color: Option<&str>| {
        let mut c = crate::common::bin();
        c.env_remove("NO_COLOR")
            .arg("--repo")
            .arg(repo.path())
            .args(["--color", color, "diff"]);
        if let Some(v) = no_color {
            c.env("NO_COLOR", v);
        }
        crate::common::Run::from(c.output().expect("the binary runs"))
    };
    let plain = good("never", None);
    assert_eq!(plain.code, 0, "{}", plain.stderr);
    assert!(plain.stderr.contains("warning:"), "{}", plain.stderr);
    let painted = good("always", None);
    assert!(
        painted.stderr.contains("\x1b["),
        "no colour under --color always:\n{}",
        painted.stderr
    );
    assert!(
        !painted.stderr.contains("warning:"),
        "`warning` not painted:\n{}",
        painted.stderr
    );
    assert_eq!(anstream::adapter::strip_str(&painted.stderr).to_string(), plain.stderr);
    assert_eq!(good("auto", None).stderr, plain.stderr, "a pipe is not a terminal");
    assert_eq!(good("auto", Some("1")).stderr, plain.stderr);

    repo.write(
        "tenants/bad.yaml",
        &GOOD.replace("      replicas: 1", "      replica: 1"),
    );
    let plain = good("never", None);
    assert_eq!(plain.code, 1, "{}", plain.stderr);
    assert!(
        plain.stderr.contains("error: unknown field `replica`"),
        "{}",
        plain.stderr
    );
    let painted = good("always", None);
    assert_eq!(painted.code, 1, "{}", painted.stderr);
    assert!(
        !painted.stderr.contains("error: unknown field"),
        "`error` not painted:\n{}",
        painted.stderr
    );
    assert_eq!(anstream::adapter::strip_str(&painted.stderr).to_string(), plain.stderr);
    assert_eq!(good("auto", None).stderr, plain.stderr, "a pipe is not a terminal");
}
