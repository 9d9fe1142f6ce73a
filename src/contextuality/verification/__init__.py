"""Verify a finished study: every file against its recorded digest and its siblings
(`study`), each named with the workflow rule that remakes it (`rules`)."""
