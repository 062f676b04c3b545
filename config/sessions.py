"""Django's database sessions, with the statement every signed-in page runs written by hand (config/rows.py):
compiling the ORM's lookup cost as much as the rest of reading the session."""
from django.contrib.sessions.backends import db
from django.utils import timezone

from config.rows import columns, select_one, table


class SessionStore(db.SessionStore):
    def _get_session_from_db(self):
        model = self.model
        row = select_one(f"SELECT {columns(model, 's')} FROM {table(model)} s "
                         "WHERE s.session_key = %s AND s.expire_date > %s", [self.session_key, timezone.now()], model)
        if row is None:
            self._session_key = None
            return None
        return row[0]
