//! Signing in with OpenID Connect, through the `openidconnect` crate: the provider's discovery
//! document and keys (fetched when first needed, again after an hour), the authorization code flow
//! with PKCE (S256) and a nonce, and the ID token checked (signature by the provider's keys,
//! issuer, audience, expiry, nonce) before its `email` claim (when the provider does not say it is
//! unverified), else its `preferred_username`, names the user in the users file.
//!
//! The sign-in under way (the PKCE verifier and the nonce) is kept server-side in the session
//! store under a random id that is also the `state` sent to the provider and a cookie of the
//! browser that started it, used once: any replica can finish it, and a `state` from another
//! browser finishes nothing. The HTTP client follows no redirects (the provider's answers are
//! read as they come) and has a time limit.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use openidconnect::core::{CoreAuthenticationFlow, CoreClient, CoreProviderMetadata};
use openidconnect::{
    AuthorizationCode, ClientId, ClientSecret, CsrfToken, IssuerUrl, Nonce, PkceCodeChallenge, PkceCodeVerifier,
    RedirectUrl, Scope, TokenResponse,
};
use serde::{Deserialize, Serialize};

pub use crate::config::OidcConfig;
use crate::error::Error;

/// How long the provider's discovery document and keys are used before they are fetched again.
const METADATA_FOR: Duration = Duration::from_secs(3600);

/// How long one request to the provider may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a sign-in may stay at the provider before it can no longer come back.
pub const PENDING_SECS: i64 = 600;

/// What a sign-in under way keeps until it comes back.
#[derive(Serialize, Deserialize)]
struct Pending {
    verifier: String,
    nonce: String,
}

pub struct Oidc {
    config: OidcConfig,
    http: openidconnect::reqwest::Client,
    metadata: Mutex<Option<(Instant, CoreProviderMetadata)>>,
}

impl std::fmt::Debug for Oidc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Oidc").field("issuer", &self.config.issuer).finish()
    }
}

impl Oidc {
    pub fn new(config: OidcConfig) -> Result<Oidc, Error> {
        IssuerUrl::new(config.issuer.clone()).map_err(|e| Error::BadSetting(format!("--oidc-issuer: {e}")))?;
        RedirectUrl::new(config.redirect.clone()).map_err(|e| Error::BadSetting(format!("--public-url: {e}")))?;
        let http = openidconnect::reqwest::Client::builder()
            .redirect(openidconnect::reqwest::redirect::Policy::none())
            .timeout(REQUEST_TIMEOUT)
            .build()
            .map_err(|e| Error::BadSetting(format!("OpenID Connect client: {e}")))?;
        Ok(Oidc { config, http, metadata: Mutex::new(None) })
    }

    /// The issuer, to name it on the sign-in page.
    pub fn issuer(&self) -> &str {
        &self.config.issuer
    }

    async fn metadata(&self) -> Result<CoreProviderMetadata, Error> {
        {
            let kept = self.metadata.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((_, m)) = kept.as_ref().filter(|(at, _)| at.elapsed() < METADATA_FOR) {
                return Ok(m.clone());
            }
        }
        let issuer = IssuerUrl::new(self.config.issuer.clone()).map_err(failed("issuer"))?;
        let m = CoreProviderMetadata::discover_async(issuer, &self.http).await.map_err(failed("discovery"))?;
        *self.metadata.lock().unwrap_or_else(|e| e.into_inner()) = Some((Instant::now(), m.clone()));
        Ok(m)
    }

    fn client(&self, metadata: CoreProviderMetadata) -> Result<ClientFor, Error> {
        let redirect = RedirectUrl::new(self.config.redirect.clone()).map_err(failed("redirect URL"))?;
        Ok(CoreClient::from_provider_metadata(
            metadata,
            ClientId::new(self.config.client_id.clone()),
            Some(ClientSecret::new(self.config.client_secret.clone())),
        )
        .set_redirect_uri(redirect))
    }

    /// What a new sign-in keeps until it comes back: a fresh PKCE verifier and nonce.
    pub fn prepare() -> Result<String, Error> {
        let (_, verifier) = PkceCodeChallenge::new_random_sha256();
        let pending = Pending { verifier: verifier.secret().clone(), nonce: Nonce::new_random().secret().clone() };
        serde_json::to_string(&pending).map_err(|e| Error::internal("sign-in state", e))
    }

    /// Where to send the browser for the sign-in kept as `pending` under `state`.
    pub async fn url(&self, state: &str, pending: &str) -> Result<String, Error> {
        let pending: Pending = serde_json::from_str(pending).map_err(|e| Error::internal("sign-in state", e))?;
        let client = self.client(self.metadata().await?)?;
        let challenge = PkceCodeChallenge::from_code_verifier_sha256(&PkceCodeVerifier::new(pending.verifier));
        let (state, nonce) = (state.to_string(), pending.nonce);
        let (url, _, _) = client
            .authorize_url(
                CoreAuthenticationFlow::AuthorizationCode,
                move || CsrfToken::new(state),
                move || Nonce::new(nonce),
            )
            .add_scope(Scope::new("email".into()))
            .add_scope(Scope::new("profile".into()))
            .set_pkce_challenge(challenge)
            .url();
        Ok(url.to_string())
    }

    /// Finishes a sign-in with the code the provider sent back and what [`Oidc::prepare`] kept:
    /// the name the ID token gives (its verified `email`, else `preferred_username`).
    pub async fn finish(&self, code: &str, pending: &str) -> Result<String, Error> {
        let pending: Pending = serde_json::from_str(pending).map_err(|e| Error::internal("sign-in state", e))?;
        let client = self.client(self.metadata().await?)?;
        let token = client
            .exchange_code(AuthorizationCode::new(code.to_string()))
            .map_err(failed("token endpoint"))?
            .set_pkce_verifier(PkceCodeVerifier::new(pending.verifier))
            .request_async(&self.http)
            .await
            .map_err(failed("token request"))?;
        let id_token = token.id_token().ok_or_else(|| refused("the provider sent no ID token".into()))?;
        let claims = match id_token.claims(&client.id_token_verifier(), &Nonce::new(pending.nonce)) {
            Ok(claims) => claims,
            Err(e) => {
                // Perhaps signed with a key made since the keys were fetched: the next sign-in
                // fetches them again.
                *self.metadata.lock().unwrap_or_else(|e| e.into_inner()) = None;
                return Err(refused(format!("the ID token was refused: {e}")));
            }
        };
        let verified = claims.email_verified() != Some(false);
        let email = claims.email().filter(|_| verified).map(|e| e.as_str().to_string());
        let username = claims.preferred_username().map(|u| u.as_str().to_string());
        email
            .or(username)
            .filter(|n| !n.trim().is_empty())
            .ok_or_else(|| refused("the ID token names no verified email and no preferred_username".into()))
    }
}

type ClientFor = CoreClient<
    openidconnect::EndpointSet,
    openidconnect::EndpointNotSet,
    openidconnect::EndpointNotSet,
    openidconnect::EndpointNotSet,
    openidconnect::EndpointMaybeSet,
    openidconnect::EndpointMaybeSet,
>;

fn failed<E: std::fmt::Display>(what: &'static str) -> impl Fn(E) -> Error {
    move |e| refused(format!("{what}: {e}"))
}

fn refused(why: String) -> Error {
    tracing::warn!(why, "OpenID Connect sign-in failed");
    Error::SignInFailed
}
