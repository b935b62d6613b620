//! Downloads over HTTP(S), all at once: GitHub answers a release download with a redirect to
//! its object store, which the client follows.

use std::time::Duration;

/// The body of each URL, in order, or why not.
pub fn all(urls: &[String], timeout: Duration) -> Vec<Result<Vec<u8>, String>> {
    if urls.is_empty() {
        return Vec::new();
    }
    let failed = |e: String| urls.iter().map(|_| Err(e.clone())).collect();
    let runtime = match crate::http::runtime() {
        Ok(r) => r,
        Err(e) => return failed(format!("cannot start the async runtime: {e}")),
    };
    let client = match crate::http::client(timeout).timeout(timeout).build() {
        Ok(c) => c,
        Err(e) => return failed(format!("cannot start the HTTP client: {e}")),
    };
    runtime.block_on(async {
        let mut tasks = tokio::task::JoinSet::new();
        for (i, url) in urls.iter().enumerate() {
            let (client, url) = (client.clone(), url.clone());
            tasks.spawn(async move { (i, get(&client, &url).await) });
        }
        let mut out: Vec<Result<Vec<u8>, String>> = urls.iter().map(|_| Err("not run".into())).collect();
        while let Some(joined) = tasks.join_next().await {
            if let Ok((i, result)) = joined {
                out[i] = result;
            }
        }
        out
    })
}

async fn get(client: &reqwest::Client, url: &str) -> Result<Vec<u8>, String> {
    let response = client.get(url).send().await.map_err(describe)?;
    let status = response.status();
    if !status.is_success() {
        return Err(format!("HTTP {status}"));
    }
    let body = response.bytes().await.map_err(describe)?;
    Ok(body.to_vec())
}

/// The error and its causes on one line, without the URL (the caller prints it once).
fn describe(e: reqwest::Error) -> String {
    crate::diagnostics::error_chain(&e.without_url())
}
