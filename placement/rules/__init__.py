"""Who may be served where and on what: residency, accelerator availability, fault domains and resource caps."""
