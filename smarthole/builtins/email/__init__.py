"""Email as a channel: mail in by IMAP, replies out by SMTP, in the same thread (docs/email.md).

A built-in plugin (``plugin``), off unless ``[email] enabled = true``; needs the ``email``
extra (IMAPClient). ``channel`` owns the reader and sender threads; ``intake`` takes each mail
exactly once; ``mailparse`` and ``mailtext`` read a mail with the standard ``email`` package;
``screening`` decides who may reach the model; ``compose`` builds replies; ``imap`` (the only
importer of ``imapclient``) and ``smtp`` speak to the servers; ``secret`` reads the password.
"""
