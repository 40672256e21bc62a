"""The relay's services, by where they run among several masters: on the leader only (duties done once per event:
LeaderDuty) or on every master (its own connections, the outbox's rows it claims, the UI)."""
