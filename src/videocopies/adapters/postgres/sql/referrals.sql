-- inviter_of --
SELECT inviter FROM referrals WHERE invitee = %(user_id)s;

-- insert_referral --
-- Run at commit inside videocopies_apply (migration 0023), as written here.
INSERT INTO referrals (invitee, inviter, at) VALUES (%(invitee)s, %(inviter)s, %(at)s);

-- rewarded_referrals --
-- The inviter's account row is locked before this is read, so two invitees' first orders
-- count each other and a cap holds exactly.
SELECT count(*) AS total, count(*) FILTER (WHERE settled_at > %(since)s) AS last_day
  FROM referrals WHERE inviter = %(inviter)s AND outcome = 'rewarded';

-- settle_referral --
-- Settled once, at the invitee's first order.
-- Run at commit inside videocopies_apply (migration 0023), as written here.
UPDATE referrals SET outcome = %(outcome)s, settled_at = %(settled_at)s
 WHERE invitee = %(invitee)s AND outcome IS NULL;
