"""The dashboard's session: the API token a person gives once, and who the API says it stands for.

A token comes from the environment of the dashboard process (``ROCEWATCH_API__TOKEN``, for a
dashboard run by one operator) or from the person, once per browser session, in the sidebar. The
API checks it (``GET /v1/identity``, through :meth:`ui.api.client.ApiClient.identity`) and answers
with the identity, its role and what it may do; the dashboard then sends it with every request,
offers only the commands it may give, and never sends a name of its own (the API records the
token's identity as the actor). A refused token is dropped with the API's reason; "Sign out"
forgets it.
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from pipeline.errors import AccessDenied, StoreError
from ui.api.access import Identity
from ui.api.client import ApiClient
from ui.dashboard.launch import DashboardOptions
from ui.dashboard.style import md


@dataclass(frozen=True)
class Session:
    token: str
    #: who the token stands for (None: no token, or the API could not say)
    identity: Identity | None

    def may(self, kind: str) -> bool:
        return self.identity is not None and kind in self.identity.may


@st.cache_resource
def client_for(api_url: str, token: str) -> ApiClient:
    return ApiClient(api_url, timeout_s=15.0, token=token)


def _forget() -> None:
    for key in ("token", "identity", "token_entry"):
        st.session_state.pop(key, None)
    st.session_state["token"] = ""


def _take_entry() -> None:
    st.session_state["token"] = str(st.session_state.get("token_entry", "")).strip()
    st.session_state.pop("identity", None)


def sign_in(options: DashboardOptions) -> Session:
    """The sidebar's token box (once per session) and who the token stands for."""
    if "token" not in st.session_state:
        st.session_state["token"] = options.token
    token: str = st.session_state["token"]
    if not token:
        with st.form("sign-in", border=False):
            st.text_input("API token", type="password", key="token_entry",
                          placeholder="rwt_…", help="A token from `rocewatch token mint`: "
                          "needed to give commands, and to read when the API requires it.")
            st.form_submit_button("Sign in", on_click=_take_entry)
        return Session("", None)
    identity = st.session_state.get("identity")
    if identity is None:
        try:
            identity = client_for(options.api_url, token).identity()
            st.session_state["identity"] = identity
        except AccessDenied as exc:
            st.error(f"Token refused: {exc}")
            st.button("Try another token", on_click=_forget)
            return Session("", None)
        except StoreError as exc:
            st.warning(f"Cannot check the token: {exc}")
            return Session(token, None)
    st.markdown(f"Signed in as **{md(identity.name)}** ({identity.role})")
    st.button("Sign out", on_click=_forget, key="sign-out")
    return Session(token, identity)
