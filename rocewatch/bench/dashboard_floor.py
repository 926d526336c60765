"""The smallest Streamlit page carrying the marks ``rocewatch bench dashboard`` waits for (a
banner, a fabric picture, a heat map table), each a few bytes: served and loaded the same way as
the dashboard, it measures what Streamlit itself costs on this machine (its frontend's
JavaScript, the websocket, one script run) before the dashboard draws anything of its own.

Run by ``streamlit run`` (``rocewatch bench dashboard --floor``); it reads nothing.
"""

from __future__ import annotations

import streamlit as st

st.set_page_config(page_title="rocewatch floor", layout="wide")
st.html('<div class="rw-banner">floor</div>')
st.markdown('<div><svg class="rw-hierarchy" width="10" height="10"></svg></div>',
            unsafe_allow_html=True)
st.html('<table class="rw-heatmap"><tr><td>floor</td></tr></table>')
