"""`rollout dashboard`: the fleet in a browser, live. The hub (one LIST+WATCH per kind and
namespace, `hub.py`), the looks it feeds (`looks.py`, as `rollout status` looks), the page's
document (views/dashboard.py), the server (`server.py`: loopback, a token, Host and CSRF
checks), the actions through the verbs' own library (`actions.py`) and the page itself
(`assets/`: HTML, CSS and JavaScript as package data, no build step). Imported by the
`rollout dashboard` command alone."""
