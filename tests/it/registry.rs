//! Registries on loopback for the `pin` tests: a real one (Debian's `docker-registry`), filled
//! with plain HTTP calls (blob uploads and manifest PUTs), and a small fake for faults a real
//! registry will not produce (a manifest whose bytes do not match its digest, a 500, silence).

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use base64::Engine;
use sha2::{Digest as _, Sha256};

/// Debian's registry binary (package `docker-registry`).
pub const REGISTRY_BIN: &str = "/usr/bin/docker-registry";

pub const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
pub const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
const OCI_CONFIG: &str = "application/vnd.oci.image.config.v1+json";
const OCI_LAYER: &str = "application/vnd.oci.image.layer.v1.tar";
const ACCEPT: &str = "application/vnd.oci.image.index.v1+json, application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json";

pub fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// A `docker-registry serve` on a free 127.0.0.1 port with its own storage; killed on drop.
pub struct Registry {
    child: Option<Child>,
    port: u16,
    dir: tempfile::TempDir,
    agent: ureq::Agent,
    /// `user:password` for pushes, when the registry has htpasswd auth.
    basic: Option<String>,
    /// The token server, when the registry has token auth.
    token: Option<TokenServer>,
}

/// How a test registry authenticates clients.
enum Auth<'a> {
    Anonymous,
    /// HTTP basic auth with this user and password.
    Htpasswd(&'a str, &'a str),
    /// The bearer-token flow through `support/token_server.py`.
    Token,
}

/// `tests/it/support/token_server.py` on a free port, with its own key and certificate; killed
/// on drop.
struct TokenServer {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl TokenServer {
    #[track_caller]
    fn start(dir: &Path) -> TokenServer {
        let (key, cert, log) = (dir.join("token.key"), dir.join("token.crt"), dir.join("tokens.log"));
        let out = Command::new("openssl")
            .args([
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-days",
                "2",
                "-subj",
                "/CN=kaas-token",
            ])
            .arg("-keyout")
            .arg(&key)
            .arg("-out")
            .arg(&cert)
            .output()
            .expect("`openssl` runs (CI's `.ci/run` installs it)");
        assert!(out.status.success(), "openssl req: {out:?}");
        std::fs::write(&log, "").unwrap();
        let args = [&key, &cert, &log].map(|p| p.as_os_str().to_owned());
        let (child, port) = crate::common::loopback_server("token_server.py", &args);
        TokenServer { child, port, log }
    }

    /// The registry's `auth:` block that sends clients here.
    fn auth_block(&self, cert: &Path) -> String {
        format!(
            "auth:\n  token:\n    realm: http://127.0.0.1:{}/token\n    service: kaas-registry\n    issuer: kaas-token-issuer\n    rootcertbundle: {}\n",
            self.port,
            cert.display()
        )
    }
}

impl Drop for TokenServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Registry {
    /// An anonymous registry.
    #[track_caller]
    pub fn start() -> Registry {
        Registry::launch(Auth::Anonymous)
    }

    /// A registry that requires HTTP basic auth with this user (bcrypt in an htpasswd file).
    #[track_caller]
    pub fn with_htpasswd(user: &str, password: &str) -> Registry {
        Registry::launch(Auth::Htpasswd(user, password))
    }

    /// A registry behind the bearer-token flow, as public registries are: anyone gets a pull
    /// token, except for `private/` repositories; `kaas:s3cret-pass` gets pull and push.
    #[track_caller]
    pub fn with_token_server() -> Registry {
        Registry::launch(Auth::Token)
    }

    #[track_caller]
    fn launch(auth: Auth) -> Registry {
        // Not a skip: the pin tests are the proof that pinning works, so a machine without the
        // registry must fail loudly. `.ci/run` installs it.
        assert!(
            Path::new(REGISTRY_BIN).is_file(),
            "`{REGISTRY_BIN}` is missing: install it with `apt-get install -y docker-registry` (CI's `.ci/run` does)"
        );
        let dir = tempfile::tempdir().expect("a temp dir");
        let port = crate::common::free_port();
        let mut token = None;
        let mut basic = None;
        let auth_block = match auth {
            Auth::Anonymous => String::new(),
            Auth::Token => {
                let server = TokenServer::start(dir.path());
                let block = server.auth_block(&dir.path().join("token.crt"));
                token = Some(server);
                block
            }
            Auth::Htpasswd(user, password) => {
                basic = Some(format!("{user}:{password}"));
                let hash = bcrypt::hash_with_result(password, 4)
                    .expect("bcrypt hashes")
                    .format_for_version(bcrypt::Version::TwoY);
                let path = dir.path().join("htpasswd");
                std::fs::write(&path, format!("{user}:{hash}\n")).unwrap();
                format!(
                    "auth:\n  htpasswd:\n    realm: kaas-test\n    path: {}\n",
                    path.display()
                )
            }
        };
        let config = format!(
            "version: 0.1\nlog:\n  level: warn\n  accesslog: {{disabled: true}}\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete: {{enabled: true}}\nhttp:\n  addr: 127.0.0.1:{port}\n{auth_block}",
            dir.path().join("storage").display()
        );
        let config_path = dir.path().join("config.yml");
        std::fs::write(&config_path, config).unwrap();
        let log = std::fs::File::create(dir.path().join("registry.log")).unwrap();
        let child = Command::new(REGISTRY_BIN)
            .arg("serve")
            .arg(&config_path)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("failed to start `{REGISTRY_BIN}`: {e}"));
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(20)))
            .build()
            .into();
        let mut registry = Registry {
            child: Some(child),
            port,
            dir,
            agent,
            basic,
            token,
        };
        registry.wait_until_ready();
        registry
    }

    /// Polls `/v2/` until the registry answers (200, or 401 with auth); panics with its log if
    /// it exits or takes unreasonably long (a readiness bound, not a timing assertion).
    fn wait_until_ready(&mut self) {
        for _ in 0..400 {
            if let Some(status) = self.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                panic!("`{REGISTRY_BIN}` exited with {status}:\n{}", self.log());
            }
            if let Ok(r) = self.agent.get(&self.url("/v2/")).call()
                && matches!(r.status().as_u16(), 200 | 401)
            {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!(
            "`{REGISTRY_BIN}` did not answer on {} within 20 s:\n{}",
            self.host(),
            self.log()
        );
    }

    /// The registry's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("registry.log")).unwrap_or_default()
    }

    /// `127.0.0.1:PORT`, as an image reference names it.
    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Stops the registry; its port then refuses connections.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Adds the credentials a push to `repo` needs: basic auth, or a push token for `repo`.
    fn authorize<B>(&self, repo: &str, req: ureq::RequestBuilder<B>) -> ureq::RequestBuilder<B> {
        if let Some(server) = &self.token {
            let url = format!(
                "http://127.0.0.1:{}/token?service=kaas-registry&scope=repository:{repo}:pull,push",
                server.port
            );
            let basic = base64::engine::general_purpose::STANDARD.encode("kaas:s3cret-pass");
            let mut resp = self
                .agent
                .get(&url)
                .header("Authorization", format!("Basic {basic}"))
                .call()
                .expect("the token server answers");
            let text = resp.body_mut().read_to_string().expect("a token response");
            let body: serde_json::Value = serde_json::from_str(&text).expect("a JSON token");
            let token = body["token"].as_str().expect("a token").to_string();
            return req.header("Authorization", format!("Bearer {token}"));
        }
        match &self.basic {
            Some(b) => req.header(
                "Authorization",
                format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(b)),
            ),
            None => req,
        }
    }

    /// The token requests so far, one `<who> <scope>` line each (token auth only).
    pub fn token_log(&self) -> String {
        self.token
            .as_ref()
            .map(|t| std::fs::read_to_string(&t.log).unwrap_or_default())
            .unwrap_or_default()
    }

    /// Uploads a blob (monolithic: POST an upload, PUT its bytes with the digest).
    #[track_caller]
    pub fn push_blob(&self, repo: &str, bytes: &[u8]) -> String {
        let digest = sha256(bytes);
        let resp = self
            .authorize(repo, self.agent.post(&self.url(&format!("/v2/{repo}/blobs/uploads/"))))
            .send_empty()
            .expect("the registry answers");
        assert_eq!(resp.status().as_u16(), 202, "start upload to {repo}");
        let location = resp
            .headers()
            .get("location")
            .and_then(|v| v.to_str().ok())
            .expect("an upload location")
            .to_string();
        let location = if location.starts_with("http") {
            location
        } else {
            self.url(&location)
        };
        let sep = if location.contains('?') { '&' } else { '?' };
        let resp = self
            .authorize(repo, self.agent.put(&format!("{location}{sep}digest={digest}")))
            .header("Content-Type", "application/octet-stream")
            .send(bytes)
            .expect("the registry answers");
        assert_eq!(resp.status().as_u16(), 201, "finish upload to {repo}");
        digest
    }

    /// PUTs a manifest under `reference` (a tag or a digest); returns the digest the registry
    /// states, after checking it is the sha256 of the bytes.
    #[track_caller]
    pub fn push_manifest(&self, repo: &str, reference: &str, media_type: &str, bytes: &[u8]) -> String {
        let mut resp = self
            .authorize(
                repo,
                self.agent.put(&self.url(&format!("/v2/{repo}/manifests/{reference}"))),
            )
            .header("Content-Type", media_type)
            .send(bytes)
            .expect("the registry answers");
        let status = resp.status().as_u16();
        let body = resp.body_mut().read_to_string().unwrap_or_default();
        assert_eq!(status, 201, "PUT manifest {repo}:{reference}: {body}");
        let stated = resp
            .headers()
            .get("docker-content-digest")
            .and_then(|v| v.to_str().ok())
            .expect("a Docker-Content-Digest header")
            .to_string();
        assert_eq!(stated, sha256(bytes));
        stated
    }

    /// Pushes a single-arch image built from `seed` (distinct seeds, distinct digests) as
    /// `repo:tag`; returns its manifest digest.
    #[track_caller]
    pub fn push_image(&self, repo: &str, tag: &str, seed: &str) -> String {
        let (bytes, _) = self.image_manifest(repo, seed, "amd64");
        self.push_manifest(repo, tag, OCI_MANIFEST, &bytes)
    }

    /// Pushes a multi-arch image (amd64 and arm64 manifests under an OCI index) as `repo:tag`;
    /// returns the index digest.
    #[track_caller]
    pub fn push_index(&self, repo: &str, tag: &str, seed: &str) -> String {
        let mut entries = Vec::new();
        for arch in ["amd64", "arm64"] {
            let (bytes, _) = self.image_manifest(repo, seed, arch);
            let digest = self.push_manifest(repo, &sha256(&bytes), OCI_MANIFEST, &bytes);
            entries.push(format!(
                r#"{{"mediaType":"{OCI_MANIFEST}","digest":"{digest}","size":{},"platform":{{"architecture":"{arch}","os":"linux"}}}}"#,
                bytes.len()
            ));
        }
        let index = format!(
            r#"{{"schemaVersion":2,"mediaType":"{OCI_INDEX}","manifests":[{}]}}"#,
            entries.join(",")
        );
        self.push_manifest(repo, tag, OCI_INDEX, index.as_bytes())
    }

    fn image_manifest(&self, repo: &str, seed: &str, arch: &str) -> (Vec<u8>, String) {
        let config = format!(
            r#"{{"architecture":"{arch}","os":"linux","config":{{"Labels":{{"seed":"{seed}"}}}},"rootfs":{{"type":"layers","diff_ids":[]}}}}"#
        );
        let layer = format!("layer of {seed} for {arch}");
        let config_digest = self.push_blob(repo, config.as_bytes());
        let layer_digest = self.push_blob(repo, layer.as_bytes());
        let manifest = format!(
            r#"{{"schemaVersion":2,"mediaType":"{OCI_MANIFEST}","config":{{"mediaType":"{OCI_CONFIG}","digest":"{config_digest}","size":{}}},"layers":[{{"mediaType":"{OCI_LAYER}","digest":"{layer_digest}","size":{}}}]}}"#,
            config.len(),
            layer.len()
        );
        let digest = sha256(manifest.as_bytes());
        (manifest.into_bytes(), digest)
    }

    /// The digest the registry states for `repo:tag` (a HEAD, as `crane digest` does).
    #[track_caller]
    pub fn digest(&self, repo: &str, tag: &str) -> String {
        let resp = self
            .authorize(repo, self.agent.head(&self.url(&format!("/v2/{repo}/manifests/{tag}"))))
            .header("Accept", ACCEPT)
            .call()
            .expect("the registry answers");
        assert_eq!(resp.status().as_u16(), 200, "HEAD {repo}:{tag}");
        resp.headers()
            .get("docker-content-digest")
            .and_then(|v| v.to_str().ok())
            .expect("a Docker-Content-Digest header")
            .to_string()
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        self.stop();
    }
}

/// What the fake registry does with every manifest request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Serve a manifest with a `Docker-Content-Digest` of other bytes.
    DigestMismatch,
    /// Answer 500.
    ServerError,
    /// Accept the connection, read the request, never answer.
    Silent,
}

/// A tiny HTTP/1.1 server on 127.0.0.1:0 that answers `/v2/` like an anonymous registry and
/// every other request with its [`Fault`]. Stops on drop.
pub struct FakeRegistry {
    port: u16,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FakeRegistry {
    /// Starts serving.
    pub fn start(fault: Fault) -> FakeRegistry {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut held = Vec::new();
            for conn in listener.incoming() {
                if flag.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = conn else { continue };
                if let Some(s) = serve(stream, fault) {
                    held.push(s);
                }
            }
        });
        FakeRegistry {
            port,
            stop,
            thread: Some(thread),
        }
    }

    /// `127.0.0.1:PORT`.
    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
}

impl Drop for FakeRegistry {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The manifest the fake serves, and a digest that is not its digest.
pub fn fake_manifest() -> (Vec<u8>, String) {
    let body = format!(
        r#"{{"schemaVersion":2,"mediaType":"{OCI_MANIFEST}","config":{{"mediaType":"{OCI_CONFIG}","digest":"{}","size":2}},"layers":[]}}"#,
        sha256(b"{}")
    );
    (body.into_bytes(), sha256(b"what the registry claims to have sent"))
}

/// Answers one connection; returns it when it must be held open (silence).
fn serve(mut stream: TcpStream, fault: Fault) -> Option<TcpStream> {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line).ok()?;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 || line == "\r\n" || line == "\n" {
            break;
        }
    }
    let mut parts = request_line.split_whitespace();
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let response = if path == "/v2/" || path == "/v2" {
        http(200, "application/json", &[], b"{}", method)
    } else {
        match fault {
            Fault::Silent => return Some(stream),
            Fault::ServerError => http(500, "text/plain", &[], b"internal error", method),
            Fault::DigestMismatch => {
                let (body, wrong) = fake_manifest();
                http(200, OCI_MANIFEST, &[("Docker-Content-Digest", &wrong)], &body, method)
            }
        }
    };
    let _ = stream.write_all(&response);
    let _ = stream.flush();
    // Drain what is left so closing does not reset the connection before the client reads.
    let _ = stream.set_read_timeout(Some(Duration::from_millis(50)));
    let _ = reader.read(&mut [0; 64]);
    None
}

fn http(status: u16, content_type: &str, headers: &[(&str, &str)], body: &[u8], method: &str) -> Vec<u8> {
    let reason = match status {
        200 => "OK",
        500 => "Internal Server Error",
        _ => "Status",
    };
    let mut head = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let mut out = head.into_bytes();
    if method != "HEAD" {
        out.extend_from_slice(body);
    }
    out
}

/// A Docker config dir holding `config.json` with `json`.
pub fn docker_config(json: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temp dir");
    std::fs::write(dir.path().join("config.json"), json).unwrap();
    dir
}

/// The path of a file in a temp dir, for tests that need one.
pub fn path_in(dir: &tempfile::TempDir, name: &str) -> PathBuf {
    dir.path().join(name)
}
