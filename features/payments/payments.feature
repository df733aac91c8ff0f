Feature: Coins bought with Telegram Stars
  Each payment credits its coins exactly once, however often we are told about it,
  and a payment we were never told about is found and credited by reconciliation.
  The coin packages: 50 Stars buy 100 coins, 100 Stars buy 220, 250 Stars buy 600.

  Scenario: A duplicate payment notification credits once
    When the user pays 50 Stars for 100 coins with charge "ch-1"
    And we are told again that charge "ch-1" paid 50 Stars for 100 coins
    Then the first notification credits the coins and the second credits nothing
    And the user holds 1 bought lot, of 100 coins
    And the user has 100 coins available

  Scenario: A repeated notification with other terms is refused
    When the user pays 50 Stars for 100 coins with charge "ch-1"
    And we are told again that charge "ch-1" paid 250 Stars for 600 coins
    Then the notification is refused because it does not match the payment already recorded
    And the user has 100 coins available

  Scenario: Reconciliation credits a payment whose notification was lost
    Given the user paid 50 Stars for 100 coins with charge "ch-1"
    And the user paid 100 Stars with charge "ch-2", but we were never told
    When the payments are reconciled
    Then charge "ch-2" is credited
    And the user has 320 coins available
    When the payments are reconciled
    Then nothing is credited
    And the user has 320 coins available

  Scenario: A lost payment that matches no coin package is reported, not credited
    Given the user paid 77 Stars with charge "ch-3", but we were never told
    When the payments are reconciled
    Then nothing is credited
    And charge "ch-3" is reported as matching no coin package
