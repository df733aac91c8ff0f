Feature: Coins given as gifts, each kind with its own life
  A new user gets a start bonus once. A user who comes through another user's invite link
  brings both of them a referral bonus when they confirm their first order, once per invited
  user, and an inviter only up to the caps; nobody invites themselves and invitations never go
  in a circle. An operator can grant coins by hand, and the grant is
  recorded with who gave them and why. Each kind of coin lives as long as the configuration
  says; the expiry sweep then takes what is left of it.

  Background:
    Given coins live:
      | kind     | days  |
      | start    | 30    |
      | referral | 60    |
      | manual   | 90    |
      | purchase | never |

  Scenario: The start bonus is given once
    When the user starts the bot
    And the user starts the bot again
    Then the user has 50 coins available

  Scenario: Both sides of an invitation get the referral bonus at the first order, once
    Given "Ann" has started the bot
    When "Bob" starts the bot through the invite link of "Ann"
    Then "Bob" has 50 coins available
    And "Ann" has 50 coins available
    When "Bob" confirms an order of 1 copy
    Then "Bob" has 75 coins available
    And "Ann" has 80 coins available
    When "Bob" starts the bot through the invite link of "Ann" again
    And "Bob" confirms an order of 1 copy
    Then "Ann" has 80 coins available

  Scenario: Invited users who never order bring nothing, and an inviter is rewarded up to the cap
    Given an inviter is rewarded for at most 2 invited users a day
    And "Ann" has started the bot
    When "Bob" starts the bot through the invite link of "Ann"
    And "Cid" starts the bot through the invite link of "Ann"
    And "Dan" starts the bot through the invite link of "Ann"
    And "Eve" starts the bot through the invite link of "Ann"
    Then "Ann" has 50 coins available
    When "Bob" confirms an order of 1 copy
    And "Cid" confirms an order of 1 copy
    And "Dan" confirms an order of 1 copy
    Then "Ann" has 110 coins available
    And "Dan" has 45 coins available
    When 1 days pass
    And "Eve" confirms an order of 1 copy
    Then "Ann" has 140 coins available

  Scenario: A user cannot invite themselves
    Given "Ann" has started the bot
    When "Ann" is rewarded for inviting "Ann"
    Then the referral is refused because a user cannot invite themselves

  Scenario: A user is invited only once
    Given "Ann" has started the bot
    And "Cid" has started the bot
    And "Bob" has started the bot through the invite link of "Ann"
    When "Cid" is rewarded for inviting "Bob"
    Then the referral is refused because the user was already invited

  Scenario: Invitations never go in a circle
    Given "Ann" has started the bot
    And "Bob" has started the bot through the invite link of "Ann"
    When "Bob" is rewarded for inviting "Ann"
    Then the referral is refused because the invitations would go in a circle

  Scenario: An operator's grant is recorded with who and why
    When operator "control-1" grants the user 25 coins because "sorry for the wait"
    Then the user has 25 coins available
    And the grant is recorded as given by "control-1" because "sorry for the wait"
    And the user is told they were given 25 coins

  Scenario: Each kind of coin expires after its own time, and the sweep takes it
    Given the user holds 10 coins of kind start
    And the user holds 20 coins of kind referral
    And the user holds 40 coins of kind manual
    And the user holds 80 coins of kind purchase
    When 45 days pass
    And the expiry sweep runs
    Then the user's coins are:
      | available | set aside | spent | expired |
      | 140       | 0         | 0     | 10      |
    And the user is told 10 coins expired
    When 100 days pass
    And the expiry sweep runs
    Then the user's coins are:
      | available | set aside | spent | expired |
      | 80        | 0         | 0     | 70      |
