-- An llm logs.db (https://llm.datasette.io) upgraded from llm 0.2x to 0.36, as SQL.
-- Made with llm's own code: its migrations, then conversation.chain(...) and
-- response.log_to_db(db) with a scripted model (tool calls, an image, a fragment,
-- reasoning, a forked thread). The legacy 'responses' rows (three conversations:
-- tool calls and results, an image attachment and a fragment, a failed tool call)
-- were written the way llm 0.2x wrote them. The 'citation' part stands for a part
-- type a newer llm may write. Full-text tables and triggers are left out.
-- Load: sqlite3 logs.db < llm-logs.sql
BEGIN TRANSACTION;
CREATE TABLE "_llm_migrations" (
   "name" TEXT PRIMARY KEY,
   "applied_at" TEXT
);
INSERT INTO "_llm_migrations" VALUES('m001_initial','2025-05-27 08:01:12.402118+00:00');
INSERT INTO "_llm_migrations" VALUES('m002_id_primary_key','2025-05-27 08:01:12.402118+00:00');
INSERT INTO "_llm_migrations" VALUES('m003_chat_id_foreign_key','2025-05-27 08:01:12.402118+00:00');
INSERT INTO "_llm_migrations" VALUES('m004_column_order','2025-05-27 08:01:12.402118+00:00');
INSERT INTO "_llm_migrations" VALUES('m004_drop_provider','2025-05-27 08:01:12.402118+00:00');
INSERT INTO "_llm_migrations" VALUES('m005_debug','2025-05-27 08:01:12.402118+00:00');
INSERT INTO "_llm_migrations" VALUES('m006_new_logs_table','2025-05-27 08:01:12.402118+00:00');
INSERT INTO "_llm_migrations" VALUES('m007_finish_logs_table','2025-05-27 08:01:12.402118+00:00');
INSERT INTO "_llm_migrations" VALUES('m008_reply_to_id_foreign_key','2025-05-27 08:01:12.402118+00:00');
INSERT INTO "_llm_migrations" VALUES('m008_fix_column_order_in_logs','2025-05-27 08:01:12.402118+00:00');
INSERT INTO "_llm_migrations" VALUES('m009_delete_logs_table_if_empty','2025-05-27 08:01:12.402118+00:00');
INSERT INTO "_llm_migrations" VALUES('m010_create_new_log_tables','2025-05-27 08:01:12.402118+00:00');
INSERT INTO "_llm_migrations" VALUES('m011_fts_for_responses','2025-05-27 08:01:12.402118+00:00');
INSERT INTO "_llm_migrations" VALUES('m012_attachments_tables','2025-05-27 08:01:12.402118+00:00');
INSERT INTO "_llm_migrations" VALUES('m013_usage','2025-05-27 08:01:12.402118+00:00');
INSERT INTO "_llm_migrations" VALUES('m014_schemas','2025-05-27 08:01:12.402118+00:00');
INSERT INTO "_llm_migrations" VALUES('m015_fragments_tables','2025-05-27 08:01:12.402118+00:00');
INSERT INTO "_llm_migrations" VALUES('m016_fragments_table_pks','2025-05-27 08:01:12.402118+00:00');
INSERT INTO "_llm_migrations" VALUES('m017_tools_tables','2025-05-27 08:01:12.402118+00:00');
INSERT INTO "_llm_migrations" VALUES('m017_tools_plugin','2025-05-27 08:01:12.402118+00:00');
INSERT INTO "_llm_migrations" VALUES('m018_tool_instances','2025-05-27 08:01:12.402118+00:00');
INSERT INTO "_llm_migrations" VALUES('m019_resolved_model','2025-05-27 08:01:12.402118+00:00');
INSERT INTO "_llm_migrations" VALUES('m020_tool_results_attachments','2025-05-27 08:01:12.402118+00:00');
INSERT INTO "_llm_migrations" VALUES('m021_tool_results_exception','2025-05-27 08:01:12.402118+00:00');
INSERT INTO "_llm_migrations" VALUES('m022_response_reasoning','2025-05-27 08:01:12.402118+00:00');
INSERT INTO "_llm_migrations" VALUES('m023_message_store','2026-11-29 15:37:37.833512+00:00');
INSERT INTO "_llm_migrations" VALUES('m024_tool_instance_references','2026-11-29 15:37:37.906957+00:00');
INSERT INTO "_llm_migrations" VALUES('m025_turn_tools_instance_backfill','2026-11-29 15:37:37.909518+00:00');
INSERT INTO "_llm_migrations" VALUES('m026_message_tree_view','2026-11-29 15:37:37.913463+00:00');
INSERT INTO "_llm_migrations" VALUES('m027_turns_response_json','2026-11-29 15:37:37.918400+00:00');
CREATE TABLE "attachments" (
   "id" TEXT PRIMARY KEY,
   "type" TEXT,
   "path" TEXT,
   "url" TEXT,
   "content" BLOB
);
INSERT INTO "attachments" VALUES('c0f1e2d3a4b5968778695a4b3c2d1e0f00112233445566778899aabbccddeeff','image/jpeg','/home/dana/photos/quay1-fender.jpg',NULL,NULL);
INSERT INTO "attachments" VALUES('71fde3856a298a052c6edb5155638d8422114e55bf0e28374d90dea8be99ef6c','image/png',NULL,NULL,X'89504E470D0A1A0A0000000D4948445200000001000000010806000000');
CREATE TABLE "conversations" (
   "id" TEXT PRIMARY KEY,
   "name" TEXT,
   "model" TEXT
);
INSERT INTO "conversations" VALUES('01jwb3k1t8q4m2d9v6x0c5r7ye','what time is it in Dublin? we close the lock…','gpt-4.1-mini');
INSERT INTO "conversations" VALUES('01jwb4f0a3n8s1k7p2h6d9z4qc','Describe the damage','gpt-4.1-mini');
INSERT INTO "conversations" VALUES('01jwb6x2m5r9t3b8c1n4v7k0sd','Check the gate log','claude-3.5-haiku');
CREATE TABLE "fragment_aliases" (
   "alias" TEXT PRIMARY KEY,
   "fragment_id" INTEGER REFERENCES "fragments"("id")
);
CREATE TABLE "fragments" (
   "id" INTEGER PRIMARY KEY,
   "hash" TEXT,
   "content" TEXT,
   "datetime_utc" TEXT,
   "source" TEXT
);
INSERT INTO "fragments" VALUES(1,'5d41402abc4b2a76b9719d911017c592','# Maintenance log

Record every defect with quay, fender number and date.
','2025-05-29T07:44:40.112233+00:00','docs/maintenance.md');
INSERT INTO "fragments" VALUES(2,'20ed837e2b9e0130e95041dfbafca46298ac16eb3fcd914c9beefbd67ef4ecec','Quay 1: 10.5 m. Quay 3: 8.5 m.','2026-11-29 15:37:37','berths.md');
CREATE TABLE "messages" (
   "hash" TEXT PRIMARY KEY,
   "parent_hash" TEXT REFERENCES "messages"("hash"),
   "role" TEXT,
   "provider_metadata" TEXT
);
INSERT INTO "messages" VALUES('b2:4c9afb7ce174f4993563a2b230cc6d9a',NULL,'system',NULL);
INSERT INTO "messages" VALUES('b2:8e26bd49725324cdce21a5a487a70939','b2:4c9afb7ce174f4993563a2b230cc6d9a','user',NULL);
INSERT INTO "messages" VALUES('b2:0520b65a428eb980114633756b43e397','b2:8e26bd49725324cdce21a5a487a70939','assistant',NULL);
INSERT INTO "messages" VALUES('b2:2ff1d2d660758eca1cd2b723fc056a45','b2:0520b65a428eb980114633756b43e397','tool',NULL);
INSERT INTO "messages" VALUES('b2:e7740fdef9bf1a3016dfd7d2a0cdaff1','b2:2ff1d2d660758eca1cd2b723fc056a45','assistant',NULL);
INSERT INTO "messages" VALUES('b2:dd033c7e53e33bf524bcac9cb7fa2c90','b2:e7740fdef9bf1a3016dfd7d2a0cdaff1','user',NULL);
INSERT INTO "messages" VALUES('b2:78aef1827107d66aa6afb43935060189','b2:dd033c7e53e33bf524bcac9cb7fa2c90','assistant',NULL);
INSERT INTO "messages" VALUES('b2:6ff645654e02244a9d5f4240f1271df6','b2:e7740fdef9bf1a3016dfd7d2a0cdaff1','user',NULL);
INSERT INTO "messages" VALUES('b2:995cc69e3ee526ac317e1fa48f59fdf9','b2:6ff645654e02244a9d5f4240f1271df6','assistant',NULL);
CREATE TABLE "part_attachments" (
   "part_id" INTEGER REFERENCES "parts"("id"),
   "attachment_id" TEXT REFERENCES "attachments"("id"),
   "order" INTEGER,
   PRIMARY KEY ("part_id", "attachment_id", "order")
);
INSERT INTO "part_attachments" VALUES(7,'71fde3856a298a052c6edb5155638d8422114e55bf0e28374d90dea8be99ef6c',0);
CREATE TABLE "part_fragments" (
   "part_id" INTEGER REFERENCES "parts"("id"),
   "fragment_id" INTEGER REFERENCES "fragments"("id"),
   "order" INTEGER,
   PRIMARY KEY ("part_id", "fragment_id", "order")
);
INSERT INTO "part_fragments" VALUES(2,2,0);
CREATE TABLE "parts" (
   "id" INTEGER PRIMARY KEY,
   "message_hash" TEXT REFERENCES "messages"("hash"),
   "position" INTEGER,
   "type" TEXT,
   "tool_name" TEXT,
   "text" TEXT,
   "payload" TEXT
);
INSERT INTO "parts" VALUES(1,'b2:4c9afb7ce174f4993563a2b230cc6d9a',0,'text',NULL,'You are Harbourmaster.',NULL);
INSERT INTO "parts" VALUES(2,'b2:8e26bd49725324cdce21a5a487a70939',0,'text',NULL,NULL,'{"text_ref": [{"fragment": 2}, {"literal": "\nWhen is high water at Port Ellis tomorrow? The Corrib Star draws 9.2 m."}]}');
INSERT INTO "parts" VALUES(3,'b2:0520b65a428eb980114633756b43e397',0,'tool_call','tide_table',NULL,'{"name": "tide_table", "arguments": {"station": "PE-04"}, "tool_call_id": "call_tide_1"}');
INSERT INTO "parts" VALUES(4,'b2:2ff1d2d660758eca1cd2b723fc056a45',0,'tool_result','tide_table',NULL,'{"name": "tide_table", "output": "PE-04 2026-03-15: HW 07:42 4.1 m, LW 13:55 0.6 m", "tool_call_id": "call_tide_1"}');
INSERT INTO "parts" VALUES(5,'b2:e7740fdef9bf1a3016dfd7d2a0cdaff1',0,'text',NULL,'High water at PE-04 is 07:42 (4.1 m). Quay 1 is the only berth for 9.2 m draught.',NULL);
INSERT INTO "parts" VALUES(6,'b2:dd033c7e53e33bf524bcac9cb7fa2c90',0,'text',NULL,'And this photo of quay 1?',NULL);
INSERT INTO "parts" VALUES(7,'b2:dd033c7e53e33bf524bcac9cb7fa2c90',1,'attachment',NULL,NULL,'{"attachment": {"id": "71fde3856a298a052c6edb5155638d8422114e55bf0e28374d90dea8be99ef6c"}}');
INSERT INTO "parts" VALUES(8,'b2:78aef1827107d66aa6afb43935060189',0,'reasoning',NULL,'The image shows quay 1; fender 3 is split.',NULL);
INSERT INTO "parts" VALUES(9,'b2:78aef1827107d66aa6afb43935060189',1,'text',NULL,'Yes: the photo shows the fender on quay 1 is damaged; I have noted that quay 1 fender 3 needs repair.',NULL);
INSERT INTO "parts" VALUES(10,'b2:6ff645654e02244a9d5f4240f1271df6',0,'text',NULL,'What about quay 2 instead?',NULL);
INSERT INTO "parts" VALUES(11,'b2:995cc69e3ee526ac317e1fa48f59fdf9',0,'text',NULL,'Quay 2 is closed for dredging until April.',NULL);
INSERT INTO "parts" VALUES(12,'b2:78aef1827107d66aa6afb43935060189',99,'citation',NULL,NULL,'{"url": "https://harbour.example.org/notices/2026-11", "title": "Notice to mariners"}');
CREATE TABLE "prompt_attachments" (
   "response_id" TEXT REFERENCES "responses"("id"),
   "attachment_id" TEXT REFERENCES "attachments"("id"),
   "order" INTEGER,
   PRIMARY KEY ("response_id", "attachment_id")
);
INSERT INTO "prompt_attachments" VALUES('01jwb4f0c6v2b9n3m7k1j5h8g4f0','c0f1e2d3a4b5968778695a4b3c2d1e0f00112233445566778899aabbccddeeff',0);
CREATE TABLE "prompt_fragments" (
   "response_id" TEXT REFERENCES "responses"("id"),
   "fragment_id" INTEGER REFERENCES "fragments"("id"),
   "order" INTEGER,
   PRIMARY KEY ("response_id", "fragment_id", "order")
);
INSERT INTO "prompt_fragments" VALUES('01jwb4g7p1o9i8u7y6t5r4e3w2q1',1,0);
CREATE TABLE "responses" (
   "id" TEXT PRIMARY KEY,
   "model" TEXT,
   "prompt" TEXT,
   "system" TEXT,
   "prompt_json" TEXT,
   "options_json" TEXT,
   "response" TEXT,
   "response_json" TEXT,
   "conversation_id" TEXT REFERENCES "conversations"("id"),
   "duration_ms" INTEGER,
   "datetime_utc" TEXT,
   "input_tokens" INTEGER,
   "output_tokens" INTEGER,
   "token_details" TEXT,
   "schema_id" TEXT REFERENCES "schemas"("id")
, "resolved_model" TEXT, "reasoning" TEXT);
INSERT INTO "responses" VALUES('01jwb3k1v2c8x5z0n7q4m1d6ts','gpt-4.1-mini','what time is it in Dublin? we close the lock gates at 18:30 local every day',NULL,'{"messages": [{"role": "user", "content": "what time is it in Dublin? we close the lock gates at 18:30 local every day"}]}','{}','','{"id": "chatcmpl-q4m1d6ts", "object": "chat.completion.chunk", "model": "gpt-4.1-mini-2025-04-14"}','01jwb3k1t8q4m2d9v6x0c5r7ye',1834,'2025-05-28T14:05:11.204311+00:00',112,38,NULL,NULL,NULL,NULL);
INSERT INTO "responses" VALUES('01jwb3k3h9w1e6r4t8y2u0i5oa','gpt-4.1-mini','',NULL,NULL,'{}','It is 15:05 in Dublin (IST, UTC+1), so the lock gates close in 3 h 25 min.','{"id": "chatcmpl-y2u0i5oa", "object": "chat.completion.chunk", "model": "gpt-4.1-mini-2025-04-14"}','01jwb3k1t8q4m2d9v6x0c5r7ye',1834,'2025-05-28T14:05:13.987120+00:00',112,38,NULL,NULL,NULL,NULL);
INSERT INTO "responses" VALUES('01jwb4f0c6v2b9n3m7k1j5h8g4f0','gpt-4.1-mini','Describe the damage',NULL,'{"messages": [{"role": "user", "content": "Describe the damage"}]}','{}','Fender 3 on quay 1 is split along its length and the chain shackle is missing.','{"id": "chatcmpl-j5h8g4f0", "object": "chat.completion.chunk", "model": "gpt-4.1-mini-2025-04-14"}','01jwb4f0a3n8s1k7p2h6d9z4qc',1834,'2025-05-29T07:41:02.551903+00:00',112,38,NULL,NULL,NULL,NULL);
INSERT INTO "responses" VALUES('01jwb4g7p1o9i8u7y6t5r4e3w2q1','gpt-4.1-mini','Log it: quay 1 fender 3 replacement ordered from Marinequip, ETA two weeks.',NULL,'{"messages": [{"role": "user", "content": "Log it: quay 1 fender 3 replacement ordered from Marinequip, ETA two weeks."}]}','{}','Logged: quay 1, fender 3, replacement ordered (Marinequip), ETA 2025-06-12.','{"id": "chatcmpl-r4e3w2q1", "object": "chat.completion.chunk", "model": "gpt-4.1-mini-2025-04-14"}','01jwb4f0a3n8s1k7p2h6d9z4qc',1834,'2025-05-29T07:44:40.300112+00:00',112,38,NULL,NULL,NULL,NULL);
INSERT INTO "responses" VALUES('01jwb6x2p8l4k0j6h2g8f4d0s6a2','claude-3.5-haiku','Check the gate log for last night','You are the lock keeper''s assistant. Be terse.','{"messages": [{"role": "user", "content": "Check the gate log for last night"}]}','{}','','{"id": "chatcmpl-f4d0s6a2", "object": "chat.completion.chunk", "model": "claude-3.5-haiku-2025-04-14"}','01jwb6x2m5r9t3b8c1n4v7k0sd',1834,'2025-05-30T18:31:09.004417+00:00',112,38,NULL,NULL,NULL,NULL);
INSERT INTO "responses" VALUES('01jwb6x4r2t6y0u4i8o2p6a0s4d8','claude-3.5-haiku','','You are the lock keeper''s assistant. Be terse.',NULL,'{}','The gate log for 29 May is missing; the file does not exist.','{"id": "chatcmpl-p6a0s4d8", "object": "chat.completion.chunk", "model": "claude-3.5-haiku-2025-04-14"}','01jwb6x2m5r9t3b8c1n4v7k0sd',1834,'2025-05-30T18:31:11.630950+00:00',112,38,NULL,NULL,NULL,NULL);
INSERT INTO "responses" VALUES('01jwb6x9z7x5c3v1b9n7m5l3k1j9','claude-3.5-haiku','',NULL,NULL,'{}','','{"id": "chatcmpl-m5l3k1j9", "object": "chat.completion.chunk", "model": "claude-3.5-haiku-2025-04-14"}','01jwb6x2m5r9t3b8c1n4v7k0sd',1834,'2025-05-30T18:32:40.120005+00:00',112,38,NULL,NULL,NULL,NULL);
CREATE TABLE "schemas" (
   "id" TEXT PRIMARY KEY,
   "content" TEXT
);
CREATE TABLE "system_fragments" (
   "response_id" TEXT REFERENCES "responses"("id"),
   "fragment_id" INTEGER REFERENCES "fragments"("id"),
   "order" INTEGER,
   PRIMARY KEY ("response_id", "fragment_id", "order")
);
CREATE TABLE "threads" (
   "id" TEXT PRIMARY KEY,
   "name" TEXT,
   "tip_message_hash" TEXT REFERENCES "messages"("hash"),
   "forked_from" TEXT REFERENCES "threads"("id"),
   "datetime_utc" TEXT
);
INSERT INTO "threads" VALUES('01m8kz8sc0a77y1x6kdmdcw476','Quay 1: 10.5 m. Quay 3: 8.5 m. …','b2:78aef1827107d66aa6afb43935060189',NULL,'2026-11-29 15:37:37.927946+00:00');
INSERT INTO "threads" VALUES('01m8kz8sdbjqdqhcbq9na759e8','quay 2 instead','b2:995cc69e3ee526ac317e1fa48f59fdf9',NULL,'2026-11-29 15:37:37.963842+00:00');
CREATE TABLE "tool_calls" (
   "id" INTEGER PRIMARY KEY,
   "response_id" TEXT REFERENCES "responses"("id"),
   "tool_id" INTEGER REFERENCES "tools"("id"),
   "name" TEXT,
   "arguments" TEXT,
   "tool_call_id" TEXT
);
INSERT INTO "tool_calls" VALUES(1,'01jwb3k1v2c8x5z0n7q4m1d6ts',1,'llm_time','{}','call_Yx2mB7dQ0pLs');
INSERT INTO "tool_calls" VALUES(2,'01jwb6x2p8l4k0j6h2g8f4d0s6a2',2,'read_file','{"path": "logs/gates-2025-05-29.txt"}','toolu_01Gh7Kd2');
CREATE TABLE "tool_instances" (
   "id" INTEGER PRIMARY KEY,
   "plugin" TEXT,
   "name" TEXT,
   "arguments" TEXT
);
CREATE TABLE "tool_instantiations" (
   "turn_id" TEXT REFERENCES "turns"("id"),
   "tool_call_id" TEXT,
   "instance_id" INTEGER REFERENCES "tool_instances"("id"),
   PRIMARY KEY ("turn_id", "tool_call_id")
);
CREATE TABLE "tool_responses" (
   "tool_id" INTEGER REFERENCES "tools"("id"),
   "response_id" TEXT REFERENCES "responses"("id"),
   PRIMARY KEY ("tool_id", "response_id")
);
INSERT INTO "tool_responses" VALUES(1,'01jwb3k1v2c8x5z0n7q4m1d6ts');
CREATE TABLE "tool_results" (
   "id" INTEGER PRIMARY KEY,
   "response_id" TEXT REFERENCES "responses"("id"),
   "tool_id" INTEGER REFERENCES "tools"("id"),
   "name" TEXT,
   "output" TEXT,
   "tool_call_id" TEXT,
   "instance_id" INTEGER REFERENCES "tool_instances"("id")
, "exception" TEXT);
INSERT INTO "tool_results" VALUES(1,'01jwb3k3h9w1e6r4t8y2u0i5oa',1,'llm_time','{"utc_time": "2025-05-28 14:05:12 UTC", "local_time": "2025-05-28 15:05:12", "timezone_name": "IST", "utc_offset": "UTC+1:00", "is_dst": true}','call_Yx2mB7dQ0pLs',NULL,NULL);
INSERT INTO "tool_results" VALUES(2,'01jwb6x4r2t6y0u4i8o2p6a0s4d8',2,'read_file','','toolu_01Gh7Kd2',NULL,'FileNotFoundError: [Errno 2] No such file or directory: ''logs/gates-2025-05-29.txt''');
CREATE TABLE "tool_results_attachments" (
   "tool_result_id" INTEGER REFERENCES "tool_results"("id"),
   "attachment_id" TEXT REFERENCES "attachments"("id"),
   "order" INTEGER,
   PRIMARY KEY ("tool_result_id", "attachment_id")
);
CREATE TABLE "tools" (
   "id" INTEGER PRIMARY KEY,
   "hash" TEXT,
   "name" TEXT,
   "description" TEXT,
   "input_schema" TEXT
, "plugin" TEXT);
INSERT INTO "tools" VALUES(1,'8b1c2f0e','llm_time','Returns the current time, as local time and UTC','{"properties": {}, "type": "object"}','llm.default_plugins.default_tools');
INSERT INTO "tools" VALUES(2,'4a7d9e31','read_file','Read a file from the working directory','{"properties": {"path": {"type": "string"}}, "required": ["path"], "type": "object"}','llm-tools-files');
INSERT INTO "tools" VALUES(3,'57529f8c8ee87b24c4fdb9cc2ea61a9bba7038be2764763aefc5d82e2a56b546','tide_table','Tide table for a station.','{"properties": {"station": {"type": "string"}}, "required": ["station"], "type": "object"}',NULL);
CREATE TABLE "turn_fragments" (
   "turn_id" TEXT REFERENCES "turns"("id"),
   "fragment_id" INTEGER REFERENCES "fragments"("id"),
   "order" INTEGER,
   "kind" TEXT,
   PRIMARY KEY ("turn_id", "fragment_id", "kind", "order")
);
INSERT INTO "turn_fragments" VALUES('01m8kz8sc47vzcf08m0yhwzzb5',2,0,'prompt');
CREATE TABLE "turn_search" (
   "id" INTEGER PRIMARY KEY,
   "turn_id" TEXT REFERENCES "turns"("id"),
   "prompt" TEXT,
   "response" TEXT
);
INSERT INTO "turn_search" VALUES(1,'01m8kz8sc47vzcf08m0yhwzzb5','
When is high water at Port Ellis tomorrow? The Corrib Star draws 9.2 m.','');
INSERT INTO "turn_search" VALUES(2,'01m8kz8scn85jbfvnqt5qb819a','','High water at PE-04 is 07:42 (4.1 m). Quay 1 is the only berth for 9.2 m draught.');
INSERT INTO "turn_search" VALUES(3,'01m8kz8scz87kcfp0f01w32x2s','And this photo of quay 1?','Yes: the photo shows the fender on quay 1 is damaged; I have noted that quay 1 fender 3 needs repair.');
CREATE TABLE "turn_tools" (
   "turn_id" TEXT REFERENCES "turns"("id"),
   "tool_id" INTEGER REFERENCES "tools"("id"),
   "instance_id" INTEGER REFERENCES "tool_instances"("id"),
   PRIMARY KEY ("turn_id", "tool_id")
);
INSERT INTO "turn_tools" VALUES('01m8kz8sc47vzcf08m0yhwzzb5',3,NULL);
INSERT INTO "turn_tools" VALUES('01m8kz8scn85jbfvnqt5qb819a',3,NULL);
INSERT INTO "turn_tools" VALUES('01m8kz8scz87kcfp0f01w32x2s',3,NULL);
CREATE TABLE "turns" (
   "id" TEXT PRIMARY KEY,
   "thread_id" TEXT REFERENCES "threads"("id"),
   "parent_message_hash" TEXT REFERENCES "messages"("hash"),
   "tip_message_hash" TEXT REFERENCES "messages"("hash"),
   "model" TEXT,
   "resolved_model" TEXT,
   "options_json" TEXT,
   "schema_id" TEXT REFERENCES "schemas"("id"),
   "input_tokens" INTEGER,
   "output_tokens" INTEGER,
   "token_details" TEXT,
   "duration_ms" INTEGER,
   "datetime_utc" TEXT
, "response_json" TEXT);
INSERT INTO "turns" VALUES('01m8kz8sc47vzcf08m0yhwzzb5','01m8kz8sc0a77y1x6kdmdcw476','b2:8e26bd49725324cdce21a5a487a70939','b2:0520b65a428eb980114633756b43e397','harbour-pilot',NULL,NULL,NULL,NULL,NULL,NULL,0,'2026-11-29T15:37:37.924159+00:00',NULL);
INSERT INTO "turns" VALUES('01m8kz8scn85jbfvnqt5qb819a','01m8kz8sc0a77y1x6kdmdcw476','b2:2ff1d2d660758eca1cd2b723fc056a45','b2:e7740fdef9bf1a3016dfd7d2a0cdaff1','harbour-pilot',NULL,NULL,NULL,NULL,NULL,NULL,0,'2026-11-29T15:37:37.941224+00:00',NULL);
INSERT INTO "turns" VALUES('01m8kz8scz87kcfp0f01w32x2s','01m8kz8sc0a77y1x6kdmdcw476','b2:dd033c7e53e33bf524bcac9cb7fa2c90','b2:78aef1827107d66aa6afb43935060189','harbour-pilot',NULL,NULL,NULL,NULL,NULL,NULL,0,'2026-11-29T15:37:37.951544+00:00',NULL);
CREATE UNIQUE INDEX "idx_fragments_hash"
    ON "fragments" ("hash");
CREATE UNIQUE INDEX "idx_tools_hash"
    ON "tools" ("hash");
CREATE INDEX "idx_messages_parent_hash"
    ON "messages" ("parent_hash");
CREATE UNIQUE INDEX "idx_parts_message_hash_position"
    ON "parts" ("message_hash", "position");
CREATE INDEX "idx_part_fragments_fragment_id"
    ON "part_fragments" ("fragment_id");
CREATE INDEX "idx_turns_thread_id"
    ON "turns" ("thread_id");
CREATE INDEX "idx_turn_fragments_fragment_id"
    ON "turn_fragments" ("fragment_id");
CREATE UNIQUE INDEX "idx_turn_search_turn_id"
    ON "turn_search" ("turn_id");
CREATE VIEW "message_tree" AS with recursive msg as (
  select m.hash, m.parent_hash, m.role, m.rowid as rid,
    replace(coalesce(
      nullif(p.text, ''),
      (select f.content from part_fragments pf
       join fragments f on f.id = pf.fragment_id
       where pf.part_id = p.id
       order by pf."order" limit 1),
      '[' || coalesce(p.type, 'empty') || ']'
    ), char(10), ' ') as text,
    (select group_concat(p2.tool_name, ', ') from parts p2
     where p2.message_hash = m.hash and p2.type = 'tool_result'
       and p2.tool_name is not null) as tools
  from messages m
  left join parts p on p.message_hash = m.hash and p.position = 0
),
tree as (
  select hash, text, tools, 0 as depth,
    printf('%012d', rid) as path, hash as root_hash
  from msg where parent_hash is null
  union all
  select msg.hash, msg.text, msg.tools, t.depth + 1,
    t.path || '/' || printf('%012d', msg.rid),
    t.root_hash
  from msg join tree t on msg.parent_hash = t.hash
),
turn_chain as (
  select t.id as turn_id, t.datetime_utc, m.hash, m.parent_hash
  from turns t join messages m on m.hash = t.tip_message_hash
  union all
  select tc.turn_id, tc.datetime_utc, m.hash, m.parent_hash
  from turn_chain tc join messages m on m.hash = tc.parent_hash
)
select
  t.root_hash,
  strftime('%Y-%m-%d %H:%M:%S',
    (select min(tc.datetime_utc) from turn_chain tc where tc.hash = t.hash)
  ) as datetime,
  replace(hex(zeroblob(t.depth)), '00', '    ') || substr(t.text, 1, 60)
    as message,
  coalesce(t.tools, '') as tools,
  t.hash as message_hash,
  t.path
from tree t
order by t.path;
COMMIT;
